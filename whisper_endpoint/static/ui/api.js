// Calls to this server: the API key (kept in this tab's session storage only), uploads with progress,
// and every error as a sentence a person can act on.

const KEY_STORAGE = "whisper-endpoint.api-key";

export const apiKey = {
  get: () => sessionStorage.getItem(KEY_STORAGE) || "",
  set: (key) => sessionStorage.setItem(KEY_STORAGE, key),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

export class ApiError extends Error {
  constructor(status, sentence, { code = null, retryAfter = null } = {}) {
    super(sentence);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

// The server's own message: {"error": "..."} on the toolkit routes, {"error": {"message"}} on /v1.
function serverMessage(body) {
  const error = body && body.error;
  if (typeof error === "string") return error;
  if (error && typeof error.message === "string") return error.message;
  return "";
}

function serverCode(body) {
  const error = body && body.error;
  if (error && typeof error === "object") return error.code || null;
  return (body && body.code) || null;
}

function seconds(value) {
  const n = Number.parseInt(value, 10);
  return Number.isFinite(n) && n > 0 ? n : null;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The sentence shown for an HTTP error (status, parsed JSON body or null, Retry-After header). */
export function describeError(status, body, retryAfterHeader = null) {
  const detail = serverMessage(body);
  const retryAfter = seconds(retryAfterHeader);
  const code = serverCode(body);
  const wait = retryAfter ? ` Try again in ${plural(retryAfter, "second")}.` : " Try again shortly.";
  let sentence;
  switch (status) {
    case 0:
      sentence = "The server could not be reached. Check that it is running, then try again.";
      break;
    case 401:
      sentence = "This server needs an API key. Enter a valid key to continue.";
      break;
    case 408:
      sentence = "The upload stalled before the whole file arrived. Try again.";
      break;
    case 413:
      sentence = "This file is too long or too large for this server." + (detail ? ` (${detail})` : "");
      break;
    case 415:
      sentence = "This file is not audio or video the server can read. Choose an audio or video file.";
      break;
    case 429:
      sentence = "The server is busy with other requests." + wait;
      break;
    case 503:
      if (code === "model_load_failed") sentence = `The server could not load its model: ${detail}`;
      else if (code === "loading") sentence = "The server is still starting (loading its model)." + wait;
      else sentence = `The server cannot take this request now${detail ? ` (${detail})` : ""}.` + wait;
      break;
    case 504:
      sentence = "The transcription took longer than this server allows for one request." +
        (detail ? ` (${detail})` : "");
      break;
    default:
      if (status >= 400 && status < 500) {
        sentence = `The server refused the request: ${detail || `HTTP ${status}`}`;
      } else {
        sentence = `The server failed to answer (HTTP ${status}).` + (detail ? ` ${detail}` : "");
      }
  }
  return new ApiError(status, sentence, { code, retryAfter });
}

function withKey(headers = {}) {
  const key = apiKey.get();
  return key ? { ...headers, Authorization: `Bearer ${key}` } : headers;
}

export function query(parameters) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== null && value !== undefined && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * One request through XMLHttpRequest (fetch reports no upload progress).
 * Resolves to {status, body (JSON or null), text}; rejects with ApiError for HTTP errors and
 * network failures, and with an AbortError when `signal` aborts.
 */
export function request(method, path, { body = null, headers = {}, onUpload = null, signal = null } = {}) {
  return new Promise((resolve, reject) => {
    // An XHR aborted before send() fires no event: a request cancelled before it starts must not start.
    if (signal?.aborted) return reject(new DOMException("cancelled", "AbortError"));
    const xhr = new XMLHttpRequest();
    const abort = () => xhr.abort();
    xhr.onloadend = () => signal?.removeEventListener("abort", abort);
    xhr.open(method, path);
    for (const [name, value] of Object.entries(withKey(headers))) xhr.setRequestHeader(name, value);
    if (onUpload) {
      xhr.upload.onprogress = (event) => onUpload(event.loaded, event.lengthComputable ? event.total : null);
      xhr.upload.onload = () => onUpload(1, 1, true);
    }
    xhr.onload = () => {
      const parsed = parse(xhr.responseText);
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve({ status: xhr.status, body: parsed, text: xhr.responseText });
      } else {
        reject(describeError(xhr.status, parsed, xhr.getResponseHeader("Retry-After")));
      }
    };
    xhr.onerror = () => reject(describeError(0, null));
    xhr.onabort = () => reject(new DOMException("cancelled", "AbortError"));
    signal?.addEventListener("abort", abort, { once: true });
    xhr.send(body);
  });
}

export const getJSON = async (path, options = {}) => (await request("GET", path, options)).body;

export const postJSON = async (path, value, options = {}) =>
  request("POST", path, { ...options, body: JSON.stringify(value), headers: { "Content-Type": "application/json" } });
