"""Datasets: download and verify real files, read embedded ones, convert both to Parquet."""
