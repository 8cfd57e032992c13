"""The generator benchmark and its logql-query sink (see loadgate.capacity)."""
