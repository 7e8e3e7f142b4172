# Parquet encoders and writer sources.
