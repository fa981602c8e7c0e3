"""Run requests through the real SageMaker Hugging Face toolkit, as its model server's Python worker does.

    python sagemaker_driver.py MODEL_DIR < requests.json > responses.json

``requests.json``: ``[{"content_type", "body_b64", "headers": {...}}]``. Each goes through
``mms.service.Service.predict`` (the worker's entry, which the Java frontend calls over a socket)
into ``HuggingFaceHandlerService.handle``, which loads ``MODEL_DIR/code/inference.py``; the worker's
binary reply is decoded back into ``{"status", "content_type", "body"}`` per request.

Run it in a fresh interpreter with ``-I`` and ``MODEL_DIR/code`` as the only project path, so only
what model.tar.gz holds is importable.
"""

import base64
import json
import struct
import sys

# transformers 5 dropped is_tf_available, which the toolkit (2.6.0) still imports; the SageMaker
# container ships transformers 4.x, where it exists. Nothing else is patched.
import transformers.file_utils as file_utils

if not hasattr(file_utils, "is_tf_available"):
    file_utils.is_tf_available = lambda: False

from mms.service import Service  # noqa: E402
from sagemaker_huggingface_inference_toolkit.handler_service import HuggingFaceHandlerService  # noqa: E402


def _batch(number: int, request: dict) -> list[dict]:
    headers = {"Content-Type": request["content_type"], "Accept": "application/json", **request.get("headers", {})}
    return [{
        "requestId": f"req-{number}".encode(),
        "parameters": [{
            "name": "body", "value": base64.b64decode(request["body_b64"]), "contentType": request["content_type"],
        }],
        "headers": [{"name": k.encode(), "value": v.encode()} for k, v in headers.items()],
    }]


def _decode(message: bytes) -> dict:
    """mms.protocol.otf_message_handler.create_predict_response, read back (one request)."""
    position = 0

    def integer() -> int:
        nonlocal position
        (value,) = struct.unpack_from("!i", message, position)
        position += 4
        return value

    def text() -> bytes:
        nonlocal position
        length = integer()
        value = message[position:position + length]
        position += length
        return value

    batch_code, _ = integer(), text()
    _request_id, content_type, status, _phrase = text(), text(), integer(), text()
    for _ in range(integer()):  # response headers
        text(), text()
    body = text()
    return {"batch_code": batch_code, "status": status, "content_type": content_type.decode(), "body": body.decode()}


def main() -> None:
    model_dir = sys.argv[1]
    service = Service("model", model_dir, None, HuggingFaceHandlerService().handle, None, 1)
    responses = [_decode(bytes(service.predict(_batch(n, r)))) for n, r in enumerate(json.load(sys.stdin))]
    json.dump(responses, sys.stdout)


if __name__ == "__main__":
    main()
