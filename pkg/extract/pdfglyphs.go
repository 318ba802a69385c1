package extract

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/unicode/norm"
)

// Simple-font encodings (PDF 32000-1 Annex D). WinAnsi and MacRoman are the
// Windows-1252 and Mac OS Roman code pages; StandardEncoding differs from
// ASCII in two quotes and in its upper half, listed here.
var standardUpper = map[byte]rune{
	0x27: '’', 0x60: '‘',
	0xA1: '¡', 0xA2: '¢', 0xA3: '£', 0xA4: '⁄', 0xA5: '¥', 0xA6: 'ƒ', 0xA7: '§', 0xA8: '¤',
	0xA9: '\'', 0xAA: '“', 0xAB: '«', 0xAC: '‹', 0xAD: '›', 0xAE: 'ﬁ', 0xAF: 'ﬂ', 0xB1: '–',
	0xB2: '†', 0xB3: '‡', 0xB4: '·', 0xB6: '¶', 0xB7: '•', 0xB8: '‚', 0xB9: '„', 0xBA: '”',
	0xBB: '»', 0xBC: '…', 0xBD: '‰', 0xBF: '¿', 0xC1: '`', 0xC2: '´', 0xC3: 'ˆ', 0xC4: '˜',
	0xC5: '¯', 0xC6: '˘', 0xC7: '˙', 0xC8: '¨', 0xCA: '˚', 0xCB: '¸', 0xCD: '˝', 0xCE: '˛',
	0xCF: 'ˇ', 0xD0: '—', 0xE1: 'Æ', 0xE3: 'ª', 0xE8: 'Ł', 0xE9: 'Ø', 0xEA: 'Œ', 0xEB: 'º',
	0xF1: 'æ', 0xF5: 'ı', 0xF8: 'ł', 0xF9: 'ø', 0xFA: 'œ', 0xFB: 'ß',
}

type baseEncoding uint8

const (
	encStandard baseEncoding = iota
	encWinAnsi
	encMacRoman
	encNone // symbolic font without a known encoding: codes as Latin-1
)

// encodingRune maps a code of a base encoding to its character, 0 if none.
func encodingRune(enc baseEncoding, code byte) rune {
	switch enc {
	case encWinAnsi:
		if code < 0x20 {
			return 0
		}
		if r := charmap.Windows1252.DecodeByte(code); r != utf8.RuneError {
			return r
		}
		return 0
	case encMacRoman:
		if code < 0x20 {
			return 0
		}
		return charmap.Macintosh.DecodeByte(code)
	case encNone:
		if code < 0x20 {
			return 0
		}
		return rune(code)
	}
	if r, ok := standardUpper[code]; ok {
		return r
	}
	if code >= 0x20 && code < 0x7F {
		return rune(code)
	}
	return 0
}

// glyphNames maps glyph names (a practical part of the Adobe Glyph List) to
// text. Names of accented Latin letters are composed in glyphText, and
// uniXXXX / uXXXX[XX] names are decoded there.
var glyphNames = map[string]string{
	"space": " ", "exclam": "!", "quotedbl": "\"", "numbersign": "#", "dollar": "$",
	"percent": "%", "ampersand": "&", "quotesingle": "'", "quoteright": "’", "parenleft": "(",
	"parenright": ")", "asterisk": "*", "plus": "+", "comma": ",", "hyphen": "-", "period": ".",
	"slash": "/", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
	"six": "6", "seven": "7", "eight": "8", "nine": "9", "colon": ":", "semicolon": ";",
	"less": "<", "equal": "=", "greater": ">", "question": "?", "at": "@", "bracketleft": "[",
	"backslash": "\\", "bracketright": "]", "asciicircum": "^", "underscore": "_", "grave": "`",
	"quoteleft": "‘", "braceleft": "{", "bar": "|", "braceright": "}", "asciitilde": "~",
	"exclamdown": "¡", "cent": "¢", "sterling": "£", "fraction": "⁄", "yen": "¥", "florin": "ƒ",
	"section": "§", "currency": "¤", "quotedblleft": "“", "guillemotleft": "«",
	"guilsinglleft": "‹", "guilsinglright": "›", "fi": "fi", "fl": "fl", "ff": "ff",
	"ffi": "ffi", "ffl": "ffl", "endash": "–", "dagger": "†", "daggerdbl": "‡",
	"periodcentered": "·", "paragraph": "¶", "bullet": "•", "quotesinglbase": "‚",
	"quotedblbase": "„", "quotedblright": "”", "guillemotright": "»", "ellipsis": "…",
	"perthousand": "‰", "questiondown": "¿", "acute": "´", "circumflex": "ˆ", "tilde": "˜",
	"macron": "¯", "breve": "˘", "dotaccent": "˙", "dieresis": "¨", "ring": "˚", "cedilla": "¸",
	"hungarumlaut": "˝", "ogonek": "˛", "caron": "ˇ", "emdash": "—", "AE": "Æ", "ordfeminine": "ª",
	"Lslash": "Ł", "Oslash": "Ø", "OE": "Œ", "ordmasculine": "º", "ae": "æ", "dotlessi": "ı",
	"dotlessj": "ȷ", "lslash": "ł", "oslash": "ø", "oe": "œ", "germandbls": "ß", "Euro": "€",
	"trademark": "™", "copyright": "©", "registered": "®", "degree": "°", "plusminus": "±",
	"twosuperior": "²", "threesuperior": "³", "onesuperior": "¹", "mu": "µ", "multiply": "×",
	"divide": "÷", "onequarter": "¼", "onehalf": "½", "threequarters": "¾", "logicalnot": "¬",
	"brokenbar": "¦", "minus": "−", "Eth": "Ð", "eth": "ð", "Thorn": "Þ", "thorn": "þ",
	"nbspace": " ", "sfthyphen": "-", "softhyphen": "-", "figuredash": "‒", "quotereversed": "‛",
	"minute": "′", "second": "″", "arrowleft": "←", "arrowright": "→", "arrowup": "↑",
	"arrowdown": "↓", "arrowboth": "↔", "lessequal": "≤", "greaterequal": "≥", "notequal": "≠",
	"approxequal": "≈", "infinity": "∞", "partialdiff": "∂", "summation": "∑", "product": "∏",
	"radical": "√", "integral": "∫", "element": "∈", "notelement": "∉", "intersection": "∩",
	"union": "∪", "proportional": "∝", "equivalence": "≡", "similar": "∼", "lozenge": "◊",
	"periodcentered.alt": "·", "dotmath": "⋅", "asteriskmath": "∗", "openbullet": "◦",
	"circle": "○", "square": "□", "filledbox": "■", "checkmark": "✓", "estimated": "℮",
	"Omega": "Ω", "Delta": "Δ", "Gamma": "Γ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π",
	"Sigma": "Σ", "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ", "alpha": "α", "beta": "β",
	"gamma": "γ", "delta": "δ", "epsilon": "ε", "zeta": "ζ", "eta": "η", "theta": "θ",
	"iota": "ι", "kappa": "κ", "lambda": "λ", "nu": "ν", "xi": "ξ", "omicron": "ο", "pi": "π",
	"rho": "ρ", "sigma": "σ", "sigma1": "ς", "tau": "τ", "upsilon": "υ", "phi": "φ", "chi": "χ",
	"psi": "ψ", "omega": "ω", "theta1": "ϑ", "phi1": "ϕ", "omega1": "ϖ", "Alpha": "Α",
	"Beta": "Β", "Epsilon": "Ε", "Zeta": "Ζ", "Eta": "Η", "Iota": "Ι", "Kappa": "Κ", "Mu": "Μ",
	"Nu": "Ν", "Omicron": "Ο", "Rho": "Ρ", "Tau": "Τ", "Chi": "Χ", "IJ": "Ĳ", "ij": "ĳ",
	"Ldot": "Ŀ", "ldot": "ŀ", "napostrophe": "ŉ", "Eng": "Ŋ", "eng": "ŋ", "kgreenlandic": "ĸ",
	"longs": "ſ", "dollaroldstyle": "$", "centoldstyle": "¢", "zerooldstyle": "0",
	"oneoldstyle": "1", "twooldstyle": "2", "threeoldstyle": "3", "fouroldstyle": "4",
	"fiveoldstyle": "5", "sixoldstyle": "6", "sevenoldstyle": "7", "eightoldstyle": "8",
	"nineoldstyle": "9", "visiblespace": "␣", "angleleft": "〈", "angleright": "〉",
	"universal": "∀", "existential": "∃", "emptyset": "∅", "gradient": "∇", "suchthat": "∋",
	"propersubset": "⊂", "propersuperset": "⊃", "reflexsubset": "⊆", "reflexsuperset": "⊇",
	"logicaland": "∧", "logicalor": "∨", "therefore": "∴", "perpendicular": "⊥",
	"angle": "∠", "aleph": "ℵ", "weierstrass": "℘", "Ifraktur": "ℑ", "Rfraktur": "ℜ",
	"club": "♣", "diamond": "♦", "heart": "♥", "spade": "♠", "arrowdblleft": "⇐",
	"arrowdblright": "⇒", "arrowdblboth": "⇔", "arrowdblup": "⇑", "arrowdbldown": "⇓",
	"congruent": "≅", "circlemultiply": "⊗", "circleplus": "⊕", "minussuperior": "⁻",
	"colonmonetary": "₡", "franc": "₣", "lira": "₤", "peseta": "₧", "dong": "₫",
}

// accents used in composed glyph names, as combining marks.
var glyphAccents = []struct {
	name string
	mark rune
}{
	{"acute", '\u0301'}, {"grave", '\u0300'}, {"circumflex", '\u0302'}, {"dieresis", '\u0308'},
	{"tilde", '\u0303'}, {"ring", '\u030A'}, {"cedilla", '\u0327'}, {"caron", '\u030C'},
	{"macron", '\u0304'}, {"breve", '\u0306'}, {"ogonek", '\u0328'}, {"dotaccent", '\u0307'},
	{"hungarumlaut", '\u030B'}, {"commaaccent", '\u0326'},
}

// glyphText returns the text of a glyph name, "" if unknown.
func glyphText(name string) string {
	if s, ok := glyphNames[name]; ok {
		return s
	}
	if len(name) == 1 && (name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return name
	}
	// Variants: "a.sc", "one.oldstyle", "T_h" (ligature of components).
	if i := strings.IndexByte(name, '.'); i > 0 {
		return glyphText(name[:i])
	}
	if strings.Contains(name, "_") {
		var b strings.Builder
		for _, part := range strings.Split(name, "_") {
			t := glyphText(part)
			if t == "" {
				return ""
			}
			b.WriteString(t)
		}
		return b.String()
	}
	// uniXXXX[XXXX...] and uXXXX[XX].
	if strings.HasPrefix(name, "uni") && len(name) >= 7 && (len(name)-3)%4 == 0 {
		var b strings.Builder
		for i := 3; i < len(name); i += 4 {
			v, err := strconv.ParseUint(name[i:i+4], 16, 32)
			if err != nil {
				return ""
			}
			b.WriteRune(rune(v))
		}
		return b.String()
	}
	if name[0] == 'u' && len(name) >= 5 && len(name) <= 7 {
		if v, err := strconv.ParseUint(name[1:], 16, 32); err == nil && utf8.ValidRune(rune(v)) {
			return string(rune(v))
		}
	}
	// Accented letters: base letter followed by the accent's name.
	if len(name) > 1 {
		for _, a := range glyphAccents {
			if len(name) == 1+len(a.name) && name[1:] == a.name {
				c := name[0]
				if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
					s := norm.NFC.String(string([]rune{rune(c), a.mark}))
					if utf8.RuneCountInString(s) == 1 {
						return s
					}
				}
			}
		}
	}
	return ""
}

// expandLigature replaces presentation-form ligatures (U+FB00–FB06), which
// ToUnicode maps often produce, with their letters so words tokenise.
func expandLigature(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r >= 0xFB00 && r <= 0xFB06 }) {
		return s
	}
	r := strings.NewReplacer("ﬀ", "ff", "ﬁ", "fi", "ﬂ", "fl", "ﬃ", "ffi", "ﬄ", "ffl", "ﬅ", "st", "ﬆ", "st")
	return r.Replace(s)
}
