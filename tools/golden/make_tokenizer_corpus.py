#!/usr/bin/env python3
"""make_tokenizer_corpus.py — writes tools/golden/tokenizer_corpus.json, the
strings the tokenizer golden test (tests/test_tokenizer_golden.c) encodes.

Deterministic (fixed seed): rerunning it reproduces the committed file byte
for byte. The corpus is committed; this script documents how it was made and
is only rerun to change it (then rerun make_tokenizer_golden.py too).

Run:  python3 tools/golden/make_tokenizer_corpus.py [out.json]

Format: {"version": 1, "entries": [...]} where each entry is
  {"name": str, "text": str}     valid UTF-8 text (JSON-escaped, exact), or
  {"name": str, "hex": str}      any bytes (invalid UTF-8), hex-encoded, or
  {"name": str, "decode": [str]} decode-only: token texts whose ids are
                                 detokenized (byte tokens forming invalid
                                 UTF-8, control tokens, ...).
Names are unique and say what the entry probes.
"""
import json
import random
import sys
from pathlib import Path

SEED = 20250107
OUT = Path(__file__).resolve().parent / "tokenizer_corpus.json"

ENGLISH = [
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It's a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife.",
    "I can't believe it's not butter! They're here, we've won, you'll see, he'd know.",
    "Don't stop me now; I'm having such a good time.",
    "CAPITAL LETTERS SHOUTING AT THE READER",
    "camelCaseIdentifierWithManyWords and snake_case_identifier_too",
    "Mr. Smith went to Washington D.C. on Jan. 3rd, 2024 at 4:30 p.m.",
    "\"Quoted speech,\" she said, 'and single quotes too.'",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    "a",
    "A",
    "I",
    "the",
    " the",
    "The",
    "hello",
    "Hello",
    "HELLO",
    "hELLO",
    "e.g. i.e. etc. vs. cf.",
    "State-of-the-art, well-known, up-to-date, mother-in-law.",
    "One sentence. Two sentences! Three sentences? Four...",
    "Tokenization is the process of breaking text into smaller units called tokens.",
    "In 1492, Columbus sailed the ocean blue.",
    "The year 2000 problem (Y2K) was a computer bug.",
    "Email me at john.doe+filter@example.co.uk or call +1 (555) 123-4567.",
    "Résumé, naïve, café, coöperate, façade, jalapeño, piñata, über.",
    "Ünïcödé with lots of dïäcrïtïcs ålso ñ ç ø æ œ ß.",
    "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
    "The slings and arrows of outrageous fortune,",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua.",
    "What's the weather like today? It's sunny with a high of 75°F (24°C).",
    "Gemma is a family of lightweight, state-of-the-art open models from Google.",
    "user: what is 2+2?\nmodel: 2+2 is 4.",
    "Dear Sir or Madam,\n\nI am writing to inform you that...\n\nYours faithfully,\nA. Person",
    "x",
    "xx",
    "xxx",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "abababababababababababababababababababab",
    "mississippi",
    "banana bandana cabana",
]

OTHER_LANGS = {
    "zh-1": "我爱自然语言处理。今天天气很好，我们去公园散步吧！",
    "zh-2": "中华人民共和国成立于1949年10月1日。",
    "zh-3": "机器学习是人工智能的一个分支，它使计算机能够从数据中学习。",
    "zh-trad": "繁體中文與簡體中文的區別在於字形。臺灣、香港、澳門使用繁體字。",
    "zh-punct": "“你好，”他说。「這是引號」『雙重引號』《书名号》【方括号】……——",
    "zh-mixed": "我用Python写了一个tokenizer，速度是100 MB/s。",
    "ja-1": "日本語の文章をトークン化します。ひらがな、カタカナ、漢字が混在しています。",
    "ja-2": "東京スカイツリーは高さ634メートルです。",
    "ja-3": "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。",
    "ja-kana": "あいうえおかきくけこさしすせそ アイウエオカキクケコ ｱｲｳｴｵ ｶﾞｷﾞｸﾞ",
    "ja-mixed": "ChatGPTとGemmaの違いは何ですか？　全角スペースも含む。",
    "ko-1": "안녕하세요! 한국어 토큰화 테스트입니다.",
    "ko-2": "대한민국의 수도는 서울특별시이다. 인구는 약 천만 명이다.",
    "ko-jamo": "ㄱㄴㄷㄹㅁㅂㅅㅇㅈㅊㅋㅌㅍㅎ ㅏㅑㅓㅕㅗㅛㅜㅠㅡㅣ",
    "ko-3": "훈민정음은 조선의 제4대 왕인 세종이 1443년에 창제한 문자이다.",
    "ar-1": "مرحبا بالعالم! هذه جملة باللغة العربية.",
    "ar-2": "اللغة العربية هي لغة سامية، يتحدث بها أكثر من 400 مليون شخص.",
    "ar-diacritics": "بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ",
    "ar-digits": "الأرقام العربية: ٠١٢٣٤٥٦٧٨٩ و 0123456789",
    "fa": "زبان فارسی یکی از زبان‌های هندواروپایی است.",
    "he": "שלום עולם! זוהי בדיקה של טקסט בעברית.",
    "hi-1": "नमस्ते दुनिया! यह हिंदी में एक वाक्य है।",
    "hi-2": "भारत एक विशाल देश है जिसकी जनसंख्या एक अरब से अधिक है।",
    "hi-digits": "देवनागरी अंक: ०१२३४५६७८९",
    "bn": "আমার সোনার বাংলা, আমি তোমায় ভালোবাসি।",
    "ta": "தமிழ் ஒரு பழமையான மொழி ஆகும்.",
    "te": "తెలుగు భాష దక్షిణ భారతదేశంలో మాట్లాడబడుతుంది.",
    "th": "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ สวัสดีครับ",
    "vi": "Tiếng Việt có nhiều dấu thanh: à, á, ả, ã, ạ, ầ, ấ, ẩ, ẫ, ậ.",
    "ru-1": "Привет, мир! Это предложение на русском языке.",
    "ru-2": "Москва — столица России, крупнейший по численности населения город страны.",
    "ru-3": "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "uk": "Україна — держава у Східній Європі. Ґанок, їжак, єнот.",
    "el": "Γειά σου Κόσμε! Η ελληνική γλώσσα έχει πολλούς τόνους: ά έ ή ί ό ύ ώ ΐ ΰ.",
    "de": "Größenwahnsinnige Straßenbahnhaltestellen sind überall in Düsseldorf.",
    "de-compound": "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft",
    "fr": "Où est la bibliothèque ? Je voudrais un café, s'il vous plaît. « Très bien ! »",
    "es": "¿Dónde está el baño? ¡Qué día tan bonito! El niño comió piñas.",
    "pt": "Ação, coração, não, pão, mãe, avô, você está bem?",
    "it": "L'Italia è una repubblica; perché no? Così è la vita.",
    "pl": "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig.",
    "cs": "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "tr": "İstanbul'da ılık bir gün. Çok güzel, şöyle böyle, ğ ı İ ş.",
    "hu": "Árvíztűrő tükörfúrógép.",
    "sv": "Flygande bäckasiner söka hwila på mjuka tuvor.",
    "fi": "Hyvää päivää! Äiti ja isä ovat kotona.",
    "nl": "Pa's wijze lynx bezag vroom het fikse aquaduct.",
    "ro": "Înțeleg că ți-ai cumpărat o mașină nouă.",
    "ka": "ქართული ენა ძალიან ლამაზია.",
    "hy": "Բարեւ աշխարհ։ Հայերեն լեզու։",
    "am": "ሰላም ለዓለም። አማርኛ ቋንቋ ነው።",
    "my": "မြန်မာဘာသာစကား",
    "km": "ភាសាខ្មែរ គឺជាភាសាផ្លូវការរបស់ប្រទេសកម្ពុជា។",
    "lo": "ພາສາລາວ",
    "si": "සිංහල භාෂාව",
    "mn": "Монгол хэл бол Монгол улсын албан ёсны хэл юм.",
    "sw": "Habari ya asubuhi? Ninafurahi kukuona.",
    "yo": "Ẹ kú àárọ̀. Báwo ni o ṣe wà?",
    "eo": "Eĥoŝanĝo ĉiuĵaŭde.",
    "ipa": "/ˌɪntərˈnæʃənəl fəˈnɛtɪk ˈælfəbɛt/ [ʔ ʕ ɬ ɮ ʘ ǀ ǃ]",
    "math-greek": "∀ε>0 ∃δ>0: |x−a|<δ ⇒ |f(x)−f(a)|<ε; ∑ᵢ₌₁ⁿ i = n(n+1)/2; ∫₀^∞ e^{-x²} dx = √π/2",
    "multi-script": "English, 中文, 日本語, 한국어, العربية, हिन्दी, русский, ελληνικά, עברית, ไทย",
}

EMOJI = {
    "emoji-simple": "😀😃😄😁😆😅😂🤣☺️😊",
    "emoji-in-text": "I love pizza 🍕 and tacos 🌮! Party time 🎉🎊",
    "emoji-zwj-family": "👨‍👩‍👧‍👦",
    "emoji-zwj-couple": "👩‍❤️‍💋‍👨 👩‍❤️‍👩",
    "emoji-zwj-professions": "👩‍💻 👨‍🚀 🧑‍🔬 👩‍⚕️ 🧑‍🍳 👨‍🎨",
    "emoji-skin-tones": "👋🏻 👋🏼 👋🏽 👋🏾 👋🏿 🤝🏽",
    "emoji-zwj-skin": "👩🏽‍💻 🧑🏿‍🤝‍🧑🏻",
    "emoji-flags": "🇺🇸 🇬🇧 🇯🇵 🇰🇷 🇨🇳 🇮🇳 🇧🇷 🇩🇪 🇫🇷 🇺🇦 🇪🇺 🇺🇳",
    "emoji-flags-glued": "🇺🇸🇬🇧🇯🇵🇰🇷🇨🇳",
    "emoji-subdivision-flags": "🏴󠁧󠁢󠁥󠁮󠁧󠁿 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏴󠁧󠁢󠁷󠁬󠁳󠁿",
    "emoji-rainbow-flag": "🏳️‍🌈 🏳️‍⚧️ 🏴‍☠️",
    "emoji-keycaps": "1️⃣ 2️⃣ #️⃣ *️⃣ 🔟",
    "emoji-variation": "❤ ❤️ ☀ ☀️ ✔ ✔️ ⚠ ⚠️",
    "emoji-animals": "🐶🐱🐭🐹🐰🦊🐻🐼🐨🐯🦁🐮🐷🐸🐵",
    "emoji-newer": "🫠 🫡 🫶 🪿 🫎 🩷 🐦‍🔥 🍋‍🟩",
    "emoji-lone-regional": "🇦 🇧 🇿",
    "emoji-run": "🔥" * 12,
    "kaomoji": "(╯°□°)╯︵ ┻━┻  ¯\\_(ツ)_/¯  ( ͡° ͜ʖ ͡°)  ಠ_ಠ",
}

CODE = {
    "code-c": "#include <stdio.h>\n\nint main(int argc, char **argv) {\n    printf(\"Hello, %s!\\n\", argv[0]);\n    return 0;\n}\n",
    "code-python": "def fibonacci(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\nprint([fibonacci(i) for i in range(10)])\n",
    "code-js": "const add = (a, b) => a + b;\nexport default async function main() {\n\tconst res = await fetch(`https://api.example.com/v1?q=${encodeURIComponent(q)}`);\n\treturn res.json();\n}\n",
    "code-rust": "fn main() {\n    let v: Vec<i32> = (1..=10).filter(|x| x % 2 == 0).collect();\n    println!(\"{:?}\", v);\n}\n",
    "code-go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tch := make(chan int, 3)\n\tgo func() { ch <- 42 }()\n\tfmt.Println(<-ch)\n}\n",
    "code-java": "public class Hello {\n    public static void main(String[] args) {\n        System.out.println(\"Hello\");\n    }\n}\n",
    "code-cpp": "template <typename T>\nstd::vector<T> f(const std::map<std::string, T>& m) { return {}; }\n",
    "code-html": "<!DOCTYPE html>\n<html>\n<head><title>Test</title></head>\n<body>\n  <div class=\"main\"><p>Hello <b>bold</b> and <i>italic</i></p></div>\n</body>\n</html>\n",
    "code-html-table": "<table><thead><tr><th>Name</th><th>Age</th></tr></thead><tbody><tr><td>Ann</td><td>31</td></tr></tbody></table>",
    "code-html-tags": "<h1>Title</h1><h2>Sub</h2><blockquote>q</blockquote><strong>s</strong><em>e</em><code>c</code><sub>1</sub><sup>2</sup><span>x</span><ul><li>a</li></ul><a>link</a><img></img><iframe></iframe><footer></footer><bbox></bbox><caption></caption><tfoot></tfoot><s>strike</s><u>u</u>",
    "code-json": "{\"name\": \"gemma\", \"layers\": 18, \"vocab\": 262144, \"tied\": true, \"eps\": 1e-6, \"list\": [1, 2, 3], \"null\": null}",
    "code-sql": "SELECT u.id, COUNT(*) AS n FROM users u JOIN orders o ON o.user_id = u.id WHERE o.total > 100 GROUP BY u.id HAVING n >= 2 ORDER BY n DESC;",
    "code-shell": "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do\n  wc -l \"$f\" | awk '{print $1}' >> out.log 2>&1\ndone\n",
    "code-latex": "\\begin{equation}\n  E = mc^2 \\quad \\text{and} \\quad \\frac{\\partial u}{\\partial t} = \\alpha \\nabla^2 u\n\\end{equation}",
    "code-markdown": "# Heading\n\n## Sub-heading\n\n- item one\n- item **two**\n\n```python\nprint('hi')\n```\n\n> quote\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    "code-yaml": "version: 2\nservices:\n  web:\n    image: \"nginx:1.25\"\n    ports:\n      - \"80:80\"\n",
    "code-regex": "^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*)@[a-z]+\\.[a-z]{2,}$",
    "code-asm": "mov eax, 1\nxor ebx, ebx\nint 0x80\n",
    "code-lisp": "(defun fact (n) (if (<= n 1) 1 (* n (fact (- n 1)))))",
    "code-haskell": "main :: IO ()\nmain = mapM_ print $ takeWhile (< 100) $ map (^2) [1..]",
    "code-indented-python": "class A:\n    def f(self):\n        if True:\n            for i in range(3):\n                while False:\n                    pass\n",
    "code-tabs-makefile": "all: main\n\nmain: main.o util.o\n\t$(CC) -o $@ $^\n\n%.o: %.c\n\t$(CC) -c $< -o $@\n",
    "code-minified": "!function(e,t){\"object\"==typeof exports&&\"undefined\"!=typeof module?module.exports=t():e.X=t()}(this,function(){return{a:1}});",
    "code-xml": "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<note><to>Tove</to><from>Jani</from></note>",
    "code-css": "body { margin: 0; padding: 0 1rem; font-family: -apple-system, \"Segoe UI\", sans-serif; }\n.a > .b:hover::after { content: \"→\"; }",
}

NUMBERS = [
    "0", "1", "9", "10", "42", "100", "999", "1000", "1234", "12345", "123456",
    "1234567890", "12345678901234567890123456789012345678901234567890",
    "3.14159265358979323846264338327950288419716939937510",
    "-273.15", "+1.5e-10", "6.02214076e23", "1,000,000", "1.000.000,00", "0x7FFFFFFF",
    "0b101010", "0o755", "255.255.255.0", "2024-01-15T13:45:30Z", "12/31/1999",
    "$19.99", "€5,00", "¥1000", "£3.50", "50%", "1/2 3/4 ⅓ ¼ ½", "¹²³ ₁₂₃ ①②③",
    "Ⅰ Ⅱ Ⅲ Ⅳ Ⅻ", "٣٤٥", "一二三四五六七八九十百千万亿", "000000000000", "007",
    "3.0.1-beta+build.5", "v1.2.3", "+44 20 7946 0958", "ISBN 978-3-16-148410-0",
]

URLS = [
    "https://www.example.com/path/to/page?query=value&other=123#section",
    "http://localhost:8080/api/v2/users/42",
    "ftp://files.example.org/pub/file.tar.gz",
    "https://github.com/ggml-org/llama.cpp/blob/master/src/llama-vocab.cpp#L100-L200",
    "https://ja.wikipedia.org/wiki/日本語",
    "https://xn--n3h.example/%E2%98%83?a=b%20c",
    "mailto:someone@example.com?subject=Hi%20there",
    "/usr/local/lib/python3.11/site-packages/numpy/__init__.py",
    "C:\\Users\\Admin\\Documents\\file (1).txt",
    "~/.cache/spillway/gemma-3-270m-q4_k_m.gguf",
    "git@github.com:user/repo.git",
    "data:text/plain;base64,SGVsbG8sIFdvcmxkIQ==",
]

PUNCT = [
    "!!!", "!!!!!!!!!!", "???", "?!?!?!", "...", "......", "…", "----------",
    "==========", "**********", "##########", "__________", "~~~~~~~~~~", "@@@@@",
    "$$$$$$$$", "%%%%%", "^^^^^", "&&&&&", "((((()))))", "[[[[]]]]", "{{{{}}}}",
    "<<<<>>>>", "<><><><>", "<<>>", "///\\\\\\", "|||||||", "\"\"\"\"\"", "'''''", "`````",
    ";;;;;", ":::::", ",,,,,", ".,;:!?", "!@#$%^&*()_+-=[]{}|;':\",./<>?`~",
    "–—―‒", "‘’“”„‟‹›«»", "•◦‣⁃∙", "¡¿", "§¶†‡", "©®™℠", "←↑→↓↔↕⇐⇒⇔",
    "♠♣♥♦♪♫☼☁☂☃", "■□▪▫▲△▼▽◆◇○●", "─│┌┐└┘├┤┬┴┼═║╔╗╚╝", "░▒▓█▄▀",
]

WHITESPACE = (
    [("spaces-%d" % n, " " * n) for n in range(1, 21)]
    + [("tabs-%d" % n, "\t" * n) for n in range(1, 21)]
    + [("newlines-%d" % n, "\n" * n) for n in range(1, 21)]
    + [("word-spaces-%d-word" % n, "word" + " " * n + "word") for n in (1, 2, 3, 5, 8, 13, 20)]
    + [("word-tabs-%d-word" % n, "word" + "\t" * n + "word") for n in (1, 2, 4, 7, 20)]
    + [("word-newlines-%d-word" % n, "word" + "\n" * n + "word") for n in (1, 2, 3, 6, 20)]
    + [
        ("spaces-31", " " * 31), ("spaces-32", " " * 32), ("spaces-33", " " * 33),
        ("spaces-62", " " * 62), ("spaces-100", " " * 100),
        ("newlines-31", "\n" * 31), ("newlines-32", "\n" * 32), ("newlines-45", "\n" * 45),
        ("tabs-31", "\t" * 31), ("tabs-40", "\t" * 40),
        ("leading-space", " leading"), ("leading-spaces-3", "   leading"),
        ("trailing-space", "trailing "), ("trailing-spaces-4", "trailing    "),
        ("both-sides", "  both sides  "), ("leading-newline", "\nstarts with newline"),
        ("trailing-newline", "ends with newline\n"), ("leading-tab", "\tindented"),
        ("crlf", "line one\r\nline two\r\nline three\r\n"), ("cr-only", "a\rb\rc"),
        ("mixed-ws", " \t \n \t\n  \n\t\t \r\n "), ("space-newline-space", "a \n b"),
        ("newline-spaces-indent", "x\n    y\n        z"), ("vertical-tab-ff", "a\x0bb\x0cc"),
        ("nbsp", "non\u00a0breaking\u00a0space"), ("ideographic-space", "全角\u3000スペース"),
        ("unicode-spaces", "en\u2002em\u2003thin\u2009hair\u200anarrow\u202fmath\u205f."),
        ("zero-width", "zero\u200bwidth\u200cnon\u200djoiner\u2060word"),
        ("line-sep", "line\u2028separator\u2029paragraph\u0085nel"),
        ("single-space", " "), ("space-word-space", " a "),
        ("u2581-itself", "\u2581"), ("u2581-run", "\u2581\u2581\u2581"),
        ("u2581-word", "\u2581hello \u2581world"),
    ]
)

SPECIAL = [
    "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n",
    "<bos><start_of_turn>user\nHi!<end_of_turn>\n<start_of_turn>model\nHello! How can I help?<end_of_turn>\n",
    "<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "<bos><bos>", "<eos><bos>",
    "<start_of_turn>", "<end_of_turn>", "<start_of_turn>model", "text<end_of_turn>more",
    "<start_of_tur", "start_of_turn>", "<start_of_turn", "<<bos>>", "<<start_of_turn>>",
    "<bos>Hello<eos>", " <bos> ", "<BOS>", "< bos >", "<bos", "bos>",
    "<unused0>", "<unused1>", "<unused99>", "<unused6241>", "<unused6242>", "<unused>",
    "<unused0><unused1>", "[multimodal]", "<start_of_image>", "<end_of_image>",
    "<image_soft_token>", "<start_of_image>image<end_of_image>", "</s>", "<s>", "<s>x</s>",
    "<0x41>", "<0xFF>", "<0x0A>", "<0x>", "<start_of_turn>user\n<bos>nested<eos><end_of_turn>",
    "<end_of_turn><end_of_turn><end_of_turn>", "<start_of_turn>system\nBe brief.<end_of_turn>\n",
    "<table><tr><td>cell</td></tr></table>", "<div><span>x</span></div>",
    "<h1>Title<h1>", "</h1>", "<b><i>bold italic</i></b>", "<table>", "< table>",
    "<start_of_turn>user\n" + "    code\n" * 3 + "<end_of_turn>",
]

RARE = {
    "private-use-e000": "\ue000", "private-use-f8ff": "\uf8ff", "private-use-mixed": "a\ue000b\ue001c",
    "supplementary-pua": "\U000f0000\U0010fffd", "max-codepoint": "\U0010ffff",
    "cjk-ext-b": "\U00020000\U00020001\U0002a6d6", "cjk-ext-b-in-text": "漢字𠀀𠀁𠀂です",
    "cjk-ext-g": "\U00030000\U0003134a", "replacement-char": "\ufffd", "bom": "\ufeffBOM first",
    "bom-middle": "mid\ufeffdle", "nul-byte": "a\x00b", "nul-only": "\x00",
    "ascii-controls": "".join(chr(c) for c in range(1, 32) if c not in (9, 10, 13)),
    "del": "\x7f", "c1-controls": "\x80\x81\x9f", "noncharacters": "\ufdd0\ufffe\uffff",
    "combining": "e\u0301 a\u0308 n\u0303 o\u0302\u0323 Z\u0351\u0352\u0353\u0354",
    "zalgo": "Z̷̢̛̛̖̥̜̝̩a̸̧̛̟̰l̶̡̗̈g̴̰̈́o̵̲̊",
    "hangul-decomposed": "\u1100\u1161\u11a8", "fullwidth": "ＡＢＣ１２３！？",
    "math-alnum": "𝐀𝐁𝐂 𝔸𝔹ℂ 𝓐𝓑𝓒 𝟘𝟙𝟚", "egyptian": "𓀀𓀁𓂀", "cuneiform": "𒀀𒀁",
    "linear-b": "𐀀𐀁", "gothic": "𐌰𐌱𐌲", "musical": "𝄞𝄢", "domino": "🀰🁀",
    "tag-chars": "\U000e0041\U000e0042", "variation-selectors": "a\ufe00b\ufe0f\U000e0100",
    "rtl-marks": "\u200fRTL\u200e\u202aembed\u202c\u2066iso\u2069",
    "surrogate-like-text": "\\ud800\\udc00", "braille": "⠓⠑⠇⠇⠕", "yi": "ꆈꌠꁱꂷ",
    "cherokee": "ᏣᎳᎩ", "runic": "ᚠᚢᚦᚨᚱᚲ", "ogham": "᚛ᚁᚂᚃ᚜",
}

INVALID = {
    "invalid-ff": b"\xff", "invalid-fe-ff": b"\xfe\xff", "invalid-c0-af": b"\xc0\xaf",
    "invalid-truncated-2": b"\xc3", "invalid-truncated-3": b"\xe2\x82",
    "invalid-truncated-4": b"\xf0\x9f\x98", "invalid-truncated-4-then-ascii": b"\xf0\x9f\x98A",
    "invalid-surrogate": b"\xed\xa0\x80", "invalid-surrogate-pair": b"\xed\xa0\x80\xed\xb0\x80",
    "invalid-lone-continuation": b"\x80", "invalid-continuations": b"\x80\x81\x82\xbf",
    "invalid-in-ascii": b"abc\x80def", "invalid-lead-then-space": b"\xe2 x",
    "invalid-lead-then-ascii": b"\xe2AB", "invalid-overlong-nul": b"\xc0\x80",
    "invalid-overlong-3": b"\xe0\x80\xaf", "invalid-above-max": b"\xf4\x90\x80\x80",
    "invalid-f5": b"\xf5\x80\x80\x80", "invalid-latin1": "café naïve".encode("latin-1"),
    "invalid-cp1252-quotes": b"\x93smart quotes\x94", "invalid-mixed": b"ok \xe6\x97 bad \xe6\x97\xa5 good",
    "invalid-lead-at-end": b"end\xe6", "invalid-utf16le": "hi".encode("utf-16-le"),
    "invalid-special-adjacent": b"\xff<start_of_turn>\xfe", "invalid-newline-adjacent": b"\xc3\n\xa9",
    "invalid-5-byte": b"\xf8\x88\x80\x80\x80", "invalid-6-byte": b"\xfc\x84\x80\x80\x80\x80",
}

DECODE = {
    "dec-byte-e6": ["<0xE6>"],
    "dec-byte-e6-97": ["<0xE6>", "<0x97>"],
    "dec-byte-e6-97-a5": ["<0xE6>", "<0x97>", "<0xA5>"],
    "dec-byte-ff": ["<0xFF>"],
    "dec-byte-80-80": ["<0x80>", "<0x80>"],
    "dec-byte-smiley": ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"],
    "dec-byte-then-word": ["<0xE6>", "\u2581hello"],
    "dec-byte-c3-then-a": ["<0xC3>", "a"],
    "dec-bos-bytes-eos": ["<bos>", "<0xE6>", "<eos>"],
    "dec-control-only": ["<bos>", "<start_of_turn>", "<end_of_turn>", "<eos>", "<pad>"],
    "dec-unused": ["<unused0>", "<unused6241>"],
    "dec-user-defined": ["[multimodal]", "<start_of_image>", "<end_of_image>", "\n\n", "  ", "\t\t"],
    "dec-eos-text-lookalike": ["</s>", "<s>"],
    "dec-normal-u2581": ["\u2581the", "\u2581", "\u2581a"],
    "dec-byte-space-first": ["<0x20>", "a"],
    "dec-mask-unk": ["<mask>", "<unk>"],
    "dec-byte-nul": ["<0x00>", "<0x0A>", "<0x09>"],
}


def random_strings(rng: random.Random) -> list:
    """Random strings from a pool of mixed scripts, spaces and punctuation."""
    pool = (
        list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        + list(" " * 10) + list("\n\t.,;:!?-_'\"()[]{}<>/\\@#$%^&*+=~`|")
        + list("éèêëàâäôöûüçñßøåæœ") + list("我你他她它们的是了在有人这中大为上个国")
        + list("あいうえおカキクケコ") + list("한국어안녕") + list("абвгдежзий")
        + list("αβγδε") + list("مرحبا") + list("नमस्ते") + ["😀", "👍", "🇺🇸", "👨‍👩‍👧", "\ue000", "𠀀"]
    )
    out = []
    for i in range(40):
        n = rng.choice([1, 2, 3, 5, 8, 13, 21, 34, 55, 89])
        out.append(("random-%02d" % i, "".join(rng.choice(pool) for _ in range(n))))
    return out


def random_bytes(rng: random.Random) -> list:
    return [("random-bytes-%02d" % i, bytes(rng.randrange(256) for _ in range(rng.choice([1, 3, 7, 16, 40]))))
            for i in range(12)]


def big_text(rng: random.Random, target: int = 100 * 1024) -> str:
    """About 100 KB of mixed prose, code, CJK, emoji and whitespace."""
    parts = ENGLISH + list(OTHER_LANGS.values()) + list(EMOJI.values()) + list(CODE.values())
    parts += NUMBERS + URLS
    out, size = [], 0
    while size < target:
        p = rng.choice(parts) + rng.choice([" ", "\n", "\n\n", "  ", "\t", ". ", ""])
        out.append(p)
        size += len(p.encode("utf-8"))
    return "".join(out)


def build() -> list:
    rng = random.Random(SEED)
    entries = [{"name": "empty", "text": ""}]
    entries += [{"name": "en-%02d" % i, "text": t} for i, t in enumerate(ENGLISH)]
    entries += [{"name": k, "text": v} for k, v in OTHER_LANGS.items()]
    entries += [{"name": k, "text": v} for k, v in EMOJI.items()]
    entries += [{"name": k, "text": v} for k, v in CODE.items()]
    entries += [{"name": "num-%02d" % i, "text": t} for i, t in enumerate(NUMBERS)]
    entries += [{"name": "url-%02d" % i, "text": t} for i, t in enumerate(URLS)]
    entries += [{"name": "punct-%02d" % i, "text": t} for i, t in enumerate(PUNCT)]
    entries += [{"name": k, "text": v} for k, v in WHITESPACE]
    entries += [{"name": "special-%02d" % i, "text": t} for i, t in enumerate(SPECIAL)]
    entries += [{"name": k, "text": v} for k, v in RARE.items()]
    entries += [{"name": k, "hex": v.hex()} for k, v in INVALID.items()]
    entries += [{"name": k, "text": v} for k, v in random_strings(rng)]
    entries += [{"name": k, "hex": v.hex()} for k, v in random_bytes(rng)]
    entries.append({"name": "big-100k", "text": big_text(rng)})
    entries += [{"name": k, "decode": v} for k, v in DECODE.items()]
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names)), "duplicate entry names"
    return entries


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    entries = build()
    doc = {"version": 1, "seed": SEED, "entries": entries}
    out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    n_dec = sum(1 for e in entries if "decode" in e)
    print(f"wrote {out}: {len(entries) - n_dec} strings to encode, {n_dec} id lists to decode")


if __name__ == "__main__":
    main()
