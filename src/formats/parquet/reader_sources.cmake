# Parquet metadata, codecs, decoders and reader sources.
