"""Statistics built from evaluation Parquet files: hypervolume curves, t-tests, overheads."""
