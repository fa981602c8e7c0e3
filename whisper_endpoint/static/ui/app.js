// The page: what the server offers (GET /ui/config.json), the API key, a file or a recording in, the
// result out. A job's id is kept in the URL (?job=...), so a reload finds its result.

import { apiKey, getJSON } from "./api.js";
import { LiveSession } from "./recorder.js";
import { ResultView } from "./result-view.js";
import { asJob, deleteJob, followJob, mediaDuration, parametersFor, tooLarge, transcribe } from "./transcribe.js";

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
    text = `Transcribing: ${done} of ${total} windows`;
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
    const job = jobOfUrl();
    if (job && !state.controller && $("result").hidden) resumeJob(job); // the link needed the key
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
      const title = name.replace(/^./, (c) => c.toUpperCase());
      language.append(new Option(title, code));
      $("languages").append(new Option(title, code));
    }
    const detecting = () => { $("languages-option").hidden = Boolean(language.value); };
    language.addEventListener("change", detecting);
    detecting();
  } else {
    language.options[0].textContent = "English (this model is English-only)";
    language.disabled = true;
  }
  view.setDownloads(config.downloads);
  view.setLibrary(config.speaker_library);
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
  $("submit").disabled = !state.config || Boolean(state.controller);
  clearError();
}

/** The languages "Detect only among" names, when the language is detected (none: any). */
function chosenLanguages() {
  if ($("language").value) return [];
  return Array.from($("languages").selectedOptions, (option) => option.value);
}

function options() {
  const count = (id) => Number.parseInt($(id).value, 10) || null;
  return {
    language: $("language").value,
    languages: chosenLanguages(),
    task: $("task").value,
    diarize: $("diarize").checked,
    numSpeakers: count("num-speakers"),
    minSpeakers: count("min-speakers"),
    maxSpeakers: count("max-speakers"),
  };
}

function busy(running) {
  $("cancel").hidden = !running;
  $("submit").disabled = running || !(state.file && state.config);
  $("transcribe-recording").disabled = running;
}

async function run(file) {
  if (state.controller) return; // one transcription at a time
  clearError();
  const config = state.config;
  const controller = (state.controller = new AbortController());
  busy(true);
  $("cancel").focus();
  showProgress({ stage: "uploading", loaded: 0, total: file.size });
  try {
    const job = asJob(file, await mediaDuration(file), config);
    const refused = tooLarge(file, job, config);
    if (refused) throw refused;
    jobInUrl(null);
    const result = await transcribe(file, parametersFor(options(), config), {
      job, signal: controller.signal, onProgress: showProgress,
      onJob: (id) => { state.job = id; jobInUrl(id); },
    });
    view.show(result, file, file.name, state.job);
    $("result-heading").focus();
  } catch (error) {
    if (error.name !== "AbortError") showError(error);
    if ($("cancel") === document.activeElement) $("submit").focus();
  } finally {
    settled();
  }
}

/** A transcription (a run or a resumed job) is over, whatever its outcome. */
function settled() {
  hideProgress();
  state.controller = null;
  state.job = null;
  busy(false);
}

function cancel() {
  state.controller?.abort();
  if (state.job) deleteJob(state.job);
  jobInUrl(null);
}

function jobOfUrl() {
  return new URLSearchParams(location.search).get("job");
}

async function resumeJob(id) {
  const controller = (state.controller = new AbortController());
  state.job = id;
  busy(true);
  showProgress({ stage: "queued" });
  try {
    view.show(await followJob(id, { onProgress: showProgress, signal: controller.signal }), null, "transcript", id);
  } catch (error) {
    if (error.name !== "AbortError") showError(error);
    if (error.status === 404) jobInUrl(null);
  } finally {
    settled();
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
  if (utterance.final && !utterance.failed && !utterance.text.trim()) {
    line.remove(); // nothing was said in it
    return;
  }
  const span = (name, text) => Object.assign(document.createElement("span"), { className: name, textContent: text });
  const text = span("live-text", utterance.text.trim() || (utterance.failed ? "(not transcribed)" : "…"));
  // The session's label for a completed utterance: a library name, or SPEAKER_NN stable within the session.
  line.replaceChildren(...(utterance.speaker ? [span("live-speaker", utterance.speaker), " "] : []), text);
  line.classList.toggle("pending", !utterance.final);
  line.classList.toggle("failed", utterance.failed);
}

async function record() {
  clearError();
  $("record").disabled = true;
  $("transcribe-recording").hidden = true;
  $("live-transcript").replaceChildren();
  const language = state.config.multilingual ? $("language").value || null : null;
  const languages = state.config.multilingual ? chosenLanguages() : [];
  const speakerLabels = Boolean(state.config.diarization && $("diarize").checked); // "who spoke when", live
  state.session = new LiveSession({ language, languages, speakerLabels, onUtterance: showUtterance,
                                    onError: showError });
  try {
    await state.session.start();
    $("stop").disabled = false;
    $("stop").focus();
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
  const session = state.session;
  state.recording = await session.stop();
  state.session = null;
  for (const [id, utterance] of session.utterances) { // begun, never transcribed: stopped within a breath
    if (!utterance.final) showUtterance(id, { ...utterance, final: true });
  }
  $("record").textContent = "Record";
  $("record").disabled = false;
  $("transcribe-recording").hidden = false;
  $("transcribe-recording").focus();
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
  const job = jobOfUrl();
  if (job && !(state.config.auth_required && !apiKey.get())) await resumeJob(job); // else: once the key is in
}

main();
