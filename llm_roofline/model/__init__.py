"""Model description: ModelSpec (spec.py) and the Hugging Face config reader.

hf.py: public entry points (load_model, list_models, spec_from_config); config_files.py: locating and reading
config.json; architectures.py: the per-model_type table and key names; reader.py: validated key reads;
layers.py: attention / FFN / grouping readers; weights.py: dtype and quantization.
"""
