"""Model description: ModelSpec (spec.py) and the Hugging Face config reader, the only code that knows HF key names.

hf.py: public entry points (load_model, list_models, spec_from_config); config_files.py: locating and reading
config.json safely; architectures.py: the per-model_type ARCHITECTURES table, key names and size bounds;
scope.py: the text tower of multimodal wrappers, refusals, keys the reader did not use; reader.py: validated key
reads; layers.py: attention / FFN / per-layer structure and grouping; weights.py: dtype and quantization.
"""
