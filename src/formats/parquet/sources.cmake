# Sources of the Parquet reader and writer, part of feeder_core (no LibTorch).
