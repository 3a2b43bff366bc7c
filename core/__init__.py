"""What every layer needs and none of them owns: the engine descriptors and their pin table, the cell record and its
JSON Schemas, the one results reader, the CPU's INT8 probe, the judge of outputs, portable paths, the one-line
argument parser and the vocabulary.

It sits below the catalogue (cases/) and imports nothing of the repository's other packages; standard library (and
numpy where a module says so) only, and no engine.
"""
