"""What changes the weights, and the settings that say how."""
