"""The functions and classes behind `psych_runtime`'s public names."""
