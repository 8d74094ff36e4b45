# The release version: scripts/build-wheels.sh reads it from here and links
# the same string into the binary (verl-score --version).
__version__ = "0.1.0"
