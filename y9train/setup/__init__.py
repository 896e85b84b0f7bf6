"""What a training or validation run decides before its first step."""
