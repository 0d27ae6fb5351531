"""kinesis package."""
