// The page: what the server offers (GET /ui/config.json), the API key, a file or a recording in, the
// result out. A job's id is kept in the URL (?job=...), so a reload finds its result.

import { apiKey, getJSON } from "./api.js";
import { LiveSession } from "./recorder.js";
import { ResultView } from "./result-view.js";
import { asJob, deleteJob, followJob, mediaDuration, parametersFor, transcribe } from "./transcribe.js";

const $ = (id) => document.getElementById(id);
const state = { config: null, file: null, controller: null, job: null, session: null, recording: null };
const view = new ResultView({ onError: showError });

function showError(error) {
  $("error").textContent = error instanceof Error ? error.message : String(error);
  $("error").hidden = false;
  if (error?.status === 401) askForKey();
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

const STAGES = {
  queued: "Waiting for the server to start on it…",
  decoding: "Transcribing…",
  diarizing: "Finding who spoke when…",
};

function showProgress({ stage, loaded, total, done }) {
  const bar = $("progress-bar");
  $("progress").hidden = false;
  if (stage === "uploading") {
    const share = total ? loaded / total : null;
    $("progress-text").textContent = share === null ? "Uploading…" : `Uploading… ${Math.round(share * 100)}%`;
    if (share === null) bar.removeAttribute("value");
    else bar.value = share;
    return;
  }
  let text = STAGES[stage] || "Transcribing…";
  if (stage === "decoding" && total) {
    text = `Transcribing: ${done} of ${total} windows of 30 s`;
    bar.value = done / total;
  } else {
    bar.removeAttribute("value"); // indeterminate
  }
  $("progress-text").textContent = text;
}

function hideProgress() {
  $("progress").hidden = true;
}

function jobInUrl(id) {
  const url = new URL(location.href);
  if (id) url.searchParams.set("job", id);
  else url.searchParams.delete("job");
  history.replaceState(null, "", url);
}

// --- the server and the key ---------------------------------------------------------------------

async function loadConfig() {
  for (;;) {
    try {
      const config = await getJSON("/ui/config.json");
      if (config.ready) return config;
      $("server-status").textContent = config.load_error
        ? `The server could not load its model: ${config.load_error}`
        : "The server is loading its model…";
    } catch (error) {
      $("server-status").textContent = error.message;
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function askForKey() {
  $("key-form").hidden = false;
  $("api-key").focus();
}

async function useKey(event) {
  event.preventDefault();
  clearError();
  apiKey.set($("api-key").value.trim());
  try {
    await getJSON("/v1/models"); // a guarded route: 401 unless the key is right
    $("key-form").hidden = true;
    $("api-key").value = "";
    $("change-key").hidden = false;
  } catch (error) {
    apiKey.clear();
    showError(error.status === 401 ? "That API key was not accepted. Check it and enter it again." : error);
  }
}

function applyConfig(config) {
  const features = [config.diarization ? "speakers" : null, config.realtime ? "live" : null].filter(Boolean);
  $("server-status").textContent = `Model ${config.model}${features.length ? ` · ${features.join(" · ")}` : ""}`;
  const language = $("language");
  if (config.multilingual) {
    for (const [code, name] of Object.entries(config.languages)) {
      language.append(new Option(name.replace(/^./, (c) => c.toUpperCase()), code));
    }
  } else {
    language.options[0].textContent = "English (this model is English-only)";
    language.disabled = true;
  }
  $("task-option").hidden = !config.multilingual;
  $("diarize-options").hidden = !config.diarization;
  $("record").disabled = !config.realtime;
  if (!config.realtime) $("record-panel").querySelector(".hint").textContent = "Live transcription is off on this server.";
  if (config.auth_required) {
    if (apiKey.get()) $("change-key").hidden = false;
    else askForKey();
  }
}

// --- a file in ------------------------------------------------------------------------------------

function chooseFile(file) {
  if (!file) return;
  state.file = file;
  $("file-name").textContent = file.name;
  $("submit").disabled = !state.config;
  clearError();
}

function options() {
  const count = (id) => Number.parseInt($(id).value, 10) || null;
  return {
    language: $("language").value,
    task: $("task").value,
    diarize: $("diarize").checked,
    numSpeakers: count("num-speakers"),
    minSpeakers: count("min-speakers"),
    maxSpeakers: count("max-speakers"),
  };
}

async function run(file) {
  clearError();
  const config = state.config;
  state.controller = new AbortController();
  $("cancel").hidden = false;
  $("submit").disabled = true;
  showProgress({ stage: "uploading", loaded: 0, total: file.size });
  try {
    const job = asJob(file, await mediaDuration(file), config);
    jobInUrl(null);
    const result = await transcribe(file, parametersFor(options(), config), {
      job, signal: state.controller.signal, onProgress: showProgress,
      onJob: (id) => { state.job = id; jobInUrl(id); },
    });
    view.show(result, file, file.name);
  } catch (error) {
    if (error.name !== "AbortError") showError(error);
  } finally {
    hideProgress();
    state.controller = null;
    state.job = null;
    $("cancel").hidden = true;
    $("submit").disabled = !(state.file && state.config);
  }
}

function cancel() {
  state.controller?.abort();
  if (state.job) deleteJob(state.job);
  jobInUrl(null);
}

async function resumeJob(id) {
  showProgress({ stage: "queued" });
  state.controller = new AbortController();
  $("cancel").hidden = false;
  try {
    view.show(await followJob(id, { onProgress: showProgress, signal: state.controller.signal }), null);
  } catch (error) {
    if (error.name !== "AbortError") showError(error);
    if (error.status === 404) jobInUrl(null);
  } finally {
    hideProgress();
    state.controller = null;
    $("cancel").hidden = true;
  }
}

// --- a recording in -------------------------------------------------------------------------------

function showUtterance(id, utterance) {
  let line = $("live-transcript").querySelector(`[data-item="${CSS.escape(id)}"]`);
  if (!line) {
    line = document.createElement("p");
    line.dataset.item = id;
    $("live-transcript").append(line);
  }
  line.textContent = utterance.text.trim() || "…";
  line.classList.toggle("pending", !utterance.final);
  line.classList.toggle("failed", utterance.failed);
}

async function record() {
  clearError();
  $("record").disabled = true;
  $("transcribe-recording").hidden = true;
  $("live-transcript").replaceChildren();
  const language = state.config.multilingual ? $("language").value || null : null;
  state.session = new LiveSession({ language, onUtterance: showUtterance, onError: showError });
  try {
    await state.session.start();
    $("stop").disabled = false;
    $("record").textContent = "Recording…";
  } catch (error) {
    showError(error);
    state.session = null;
    $("record").disabled = false;
  }
}

async function stop() {
  $("stop").disabled = true;
  $("record").textContent = "Finishing…";
  state.recording = await state.session.stop();
  state.session = null;
  $("record").textContent = "Record";
  $("record").disabled = false;
  $("transcribe-recording").hidden = false;
}

// --- start ---------------------------------------------------------------------------------------

function wire() {
  $("key-form").addEventListener("submit", useKey);
  $("change-key").addEventListener("click", askForKey);
  $("audio-file").addEventListener("change", (event) => chooseFile(event.target.files[0]));
  const zone = $("drop-zone");
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    chooseFile(event.dataTransfer.files[0]);
  });
  $("file-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (state.file && !state.controller) run(state.file);
  });
  $("cancel").addEventListener("click", cancel);
  $("record").addEventListener("click", record);
  $("stop").addEventListener("click", stop);
  $("transcribe-recording").addEventListener("click", () => run(state.recording));
  $("attach-audio").addEventListener("change", (event) => event.target.files[0] && view.setAudio(event.target.files[0]));
}

async function main() {
  wire();
  state.config = await loadConfig();
  applyConfig(state.config);
  $("submit").disabled = !state.file;
  const job = new URLSearchParams(location.search).get("job");
  if (job) await resumeJob(job);
}

main();
