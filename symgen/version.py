"""The package version (a leaf module: every stage may import it without importing the package)."""
__version__ = "0.1.0"
