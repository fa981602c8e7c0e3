# Custom container for Hugging Face Inference Endpoints and SageMaker: the project's own setup
# (scripts/setup.sh: .venv + pinned requirements + embedded models), then the HTTP server.
#
#   docker build -t whisper-endpoint .
#   docker run -p 8080:8080 -e ASR_MODEL=embedded:tiny.en whisper-endpoint          # or: ... serve
#
# For a GPU, build on a CUDA runtime image: --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
# (any base with python3 >= 3.10 and its venv module).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    MODEL_CACHE_DIR=/opt/whisper-endpoint/cache \
    PORT=8080

# Not root: the server needs to write only its model cache.
RUN useradd --create-home --uid 1000 app && mkdir -p /opt/whisper-endpoint && chown app /opt/whisper-endpoint
USER app
WORKDIR /opt/whisper-endpoint/app
COPY --chown=app . .
RUN bash scripts/setup.sh

# 8080: SageMaker's port; Inference Endpoints: set the custom image's port to 8080 and its health route to /health.
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --start-period=120s \
    CMD .venv/bin/python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ[\"PORT\"]}/health', timeout=2)"

# SageMaker starts the container as `docker run IMAGE serve`; both forms run the same server.
ENTRYPOINT [".venv/bin/whisper-endpoint"]
CMD ["serve"]
