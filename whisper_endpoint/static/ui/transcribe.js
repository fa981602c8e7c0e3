// A file to a transcript: short files to POST /predict, long ones through the jobs API, whose progress
// the page follows and whose id survives a reload (kept in the URL by the caller).

import { describeError, getJSON, query, request } from "./api.js";

const POLL_MS = 1000;
// Bytes per second of 16 kHz 16-bit mono PCM: when the browser cannot tell a file's duration, its size
// over this is taken as its length, which overestimates it for every compressed format.
const PCM_BYTES_PER_S = 32000;

/** The handler parameters for the page's options (`config`: GET /ui/config.json). */
export function parametersFor(options, config) {
  const diarize = Boolean(config.diarization && options.diarize);
  const parameters = {
    return_timestamps: "word",
    return_confidence: true,
    language: options.language || null,
    languages: !options.language && options.languages?.length ? options.languages : null,
    task: config.multilingual && options.task === "translate" ? "translate" : null,
  };
  if (config.diarization) parameters.diarize = diarize;
  if (diarize) {
    parameters.return_speaker_words = true;
    parameters.return_speaker_turns = true; // where each voice speaks alone: "Remember this voice" cuts its clips there
    parameters.num_speakers = options.numSpeakers || null;
    parameters.min_speakers = options.minSpeakers || null;
    parameters.max_speakers = options.maxSpeakers || null;
  }
  return parameters;
}

/** A media file's duration in seconds as the browser reads it; NaN when it cannot. */
export function mediaDuration(file, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const media = document.createElement("audio");
    const url = URL.createObjectURL(file);
    const done = (value) => {
      clearTimeout(timer);
      media.removeAttribute("src");
      URL.revokeObjectURL(url);
      resolve(value);
    };
    const timer = setTimeout(() => done(Number.NaN), timeoutMs);
    media.preload = "metadata";
    media.onloadedmetadata = () => done(Number.isFinite(media.duration) ? media.duration : Number.NaN);
    media.onerror = () => done(Number.NaN);
    media.src = url;
  });
}

/** Whether the file goes through the jobs API. */
export function asJob(file, duration, config) {
  if (!config.jobs) return false;
  if (file.size > config.max_body_bytes) return true;
  const seconds = Number.isFinite(duration) ? duration : file.size / PCM_BYTES_PER_S;
  return seconds > config.jobs_after_s;
}

const megabytes = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** The 413 an upload over the route's limit would get, said before sending it: a server that refuses a
 * body early closes the connection, which a browser over a real network often reports as a reset. */
export function tooLarge(file, job, config) {
  const [limit, setting] = job ? [config.jobs_max_body_bytes, "JOBS_MAX_BODY_BYTES"]
    : [config.max_body_bytes, "MAX_BODY_BYTES"];
  if (!limit || file.size <= limit) return null;
  return describeError(413, { error: `${megabytes(file.size)}; this server takes at most ${megabytes(limit)}, ${setting}` });
}

function uploadReporter(onProgress) {
  return (loaded, total, finished = false) =>
    onProgress(finished ? { stage: "decoding" } : { stage: "uploading", loaded, total });
}

/**
 * Transcribe `file` with `parameters`. `onProgress({stage, loaded, total, done})`; `onJob(id)` once a
 * job exists. Resolves to the handler's response.
 */
export async function transcribe(file, parameters, { job = false, onProgress, onJob, signal }) {
  const options = { body: file, headers: { "Content-Type": file.type || "application/octet-stream" } };
  const report = uploadReporter(onProgress);
  if (!job) {
    return (await request("POST", `/predict${query(parameters)}`, { ...options, onUpload: report, signal })).body;
  }
  // Once the upload is in, the server makes the job whatever happens to the connection: a cancel then
  // waits for the job's id and deletes it, rather than leaving it to run for nobody.
  const upload = new AbortController();
  let uploaded = false;
  const cancel = () => uploaded || upload.abort();
  signal?.addEventListener("abort", cancel, { once: true });
  const onUpload = (loaded, total, finished = false) => {
    uploaded ||= finished;
    report(loaded, total, finished);
  };
  let submitted;
  try {
    submitted = (await request("POST", `/jobs${query(parameters)}`, { ...options, onUpload, signal: upload.signal })).body;
  } finally {
    signal?.removeEventListener("abort", cancel);
  }
  if (signal?.aborted) {
    await deleteJob(submitted.id);
    throw new DOMException("cancelled", "AbortError");
  }
  onJob(submitted.id);
  return followJob(submitted.id, { onProgress, signal });
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    let timer = null;
    const cancelled = () => {
      clearTimeout(timer);
      reject(new DOMException("cancelled", "AbortError"));
    };
    if (signal?.aborted) return cancelled();
    timer = setTimeout(() => {
      signal?.removeEventListener("abort", cancelled);
      resolve();
    }, ms);
    signal?.addEventListener("abort", cancelled, { once: true });
  });
}

/** Poll a job until it ends: its result, or its error as an ApiError. */
export async function followJob(id, { onProgress, signal }) {
  for (;;) {
    const job = await getJSON(`/jobs/${encodeURIComponent(id)}`, { signal });
    if (job.status === "succeeded") return job.result;
    if (job.status === "failed") throw describeError(job.error?.status || 500, job.error);
    const progress = job.progress || {};
    onProgress({
      stage: job.status === "queued" ? "queued" : progress.stage || "decoding",
      done: progress.windows_done,
      total: progress.windows_total,
    });
    await sleep(POLL_MS, signal);
  }
}

export const deleteJob = (id) => request("DELETE", `/jobs/${encodeURIComponent(id)}`).catch(() => {});
