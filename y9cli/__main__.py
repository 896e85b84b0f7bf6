from y9cli.app import main

main()
