"""Entry points for the SageMaker Hugging Face inference container (``code/inference.py`` in
model.tar.gz, built by ``python -m scripts.package_sagemaker``). Defined in
whisper_endpoint/adapters/sagemaker.py, which documents the container's contract.
"""

from whisper_endpoint.adapters.sagemaker import input_fn, model_fn, output_fn, predict_fn

__all__ = ["input_fn", "model_fn", "output_fn", "predict_fn"]
