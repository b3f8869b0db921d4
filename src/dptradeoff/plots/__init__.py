"""Figures, built only from Parquet files."""
