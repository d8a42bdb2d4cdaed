"""Model description: ModelSpec (spec.py) and the Hugging Face config reader, the only code that knows HF key names.

hf.py: public entry points (load_model, list_models, spec_from_config); config_files.py: locating and reading
config.json safely; traits.py: what a model type's code hard-codes (Architecture); architectures.py: the
per-model-type ARCHITECTURES table (remote_code.py: the rows and class names of the types vLLM serves from a
checkpoint's own code); key_names.py: the names one quantity goes by and the size bounds; scope.py: the text tower
of multimodal wrappers, refusals (refusals.py: what and why), keys the reader did not use; reader.py: validated key
reads; layers.py: attention / FFN / per-layer structure and grouping; weights.py: dtype and quantization; the other
modules read one family each.
"""
