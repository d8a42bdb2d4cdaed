"""Model description: ModelSpec (spec.py) and the Hugging Face config reader (hf.py)."""
