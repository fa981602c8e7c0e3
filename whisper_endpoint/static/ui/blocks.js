// The handler's response as the page shows it: blocks (a speaker's turn, or a segment when there are no
// speakers), each with its words, and the speakers in order of first appearance. The page asks for word
// timestamps and confidence, so its chunks are words and the segments come beside them.

function span(timestamp) {
  const [start, end] = timestamp || [null, null];
  const from = start ?? 0;
  return { start: from, end: end ?? from };
}

function word(chunk, index, probability) {
  return { ...span(chunk.timestamp), text: chunk.text, index, probability: probability ?? null };
}

function wordKey(chunk) {
  return `${chunk.timestamp?.[0]}|${chunk.text}`;
}

const squashed = (text) => text.replace(/\s+/g, " ").trim();
const spelled = (words, text) => words.length > 0 && squashed(words.map((w) => w.text).join("")) === squashed(text);

/** {blocks: [{speaker, start, end, text, words}], speakers: [label], words: [word in time order]} */
export function blocksOf(result) {
  const chunks = result.chunks || [];
  const hasSegments = Array.isArray(result.segments);
  const probability = new Map(chunks.map((chunk) => [wordKey(chunk), chunk.probability]));
  const words = [];
  const wordsOf = (list) => list.map((chunk) => {
    const item = word(chunk, words.length, probability.get(wordKey(chunk)));
    words.push(item);
    return item;
  });
  let blocks;
  if (result.speakers?.length) {
    // A turn whose words do not spell its text (a segment without word times went to it whole) is shown
    // as its text: nothing in it may go missing from the page.
    blocks = result.speakers.map((turn) => ({
      speaker: turn.speaker, ...span(turn.timestamp), text: turn.text.trim(),
      words: spelled(turn.words || [], turn.text) ? wordsOf(turn.words) : [],
    }));
  } else if (hasSegments) {
    let next = 0;
    blocks = result.segments.map((segment) => {
      const { start, end } = span(segment.timestamp);
      const mine = [];
      // Each word goes to the segment its middle falls in (the last one takes what is left).
      while (next < chunks.length && (span(chunks[next].timestamp).start + span(chunks[next].timestamp).end) / 2 <= end) {
        mine.push(chunks[next++]);
      }
      return { speaker: null, start, end, text: segment.text.trim(), words: mine };
    });
    if (blocks.length && next < chunks.length) blocks.at(-1).words.push(...chunks.slice(next));
    blocks.forEach((block) => { block.words = wordsOf(block.words); });
  } else {
    blocks = chunks.map((chunk) => ({ speaker: null, ...span(chunk.timestamp), text: chunk.text.trim(), words: [] }));
  }
  blocks = blocks.filter((block) => block.text);
  const speakers = [...new Set(blocks.map((block) => block.speaker).filter((label) => label !== null))];
  return { blocks, speakers, words };
}

/** A copy of the response with each speaker label replaced by its name (downloads, JSON). */
export function named(result, names) {
  const copy = structuredClone(result);
  const rename = (item) => {
    if (item && typeof item.speaker === "string" && names[item.speaker]) item.speaker = names[item.speaker];
  };
  for (const turn of copy.speakers || []) {
    rename(turn);
    (turn.words || []).forEach(rename);
  }
  (copy.chunks || []).forEach(rename);
  (copy.speaker_turns || []).forEach(rename);
  return copy;
}
