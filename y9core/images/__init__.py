"""Image files and pictures: headers, the one checked decode, checked writes, colours."""
