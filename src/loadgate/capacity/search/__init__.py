"""The capacity search: its plan, state, methods (saturate, bisect), rule, driver, record and
spread (see loadgate.capacity)."""
