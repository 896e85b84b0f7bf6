from y9deploy.cli.app import main

main()
