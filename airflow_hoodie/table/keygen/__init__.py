"""Key generators and the timestamp formats they use."""
