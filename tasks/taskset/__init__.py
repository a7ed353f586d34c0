"""Task-set versions: loading, the label checks (Great Expectations), validation, provisional labels."""
