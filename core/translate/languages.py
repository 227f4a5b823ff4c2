"""The names of the languages the product meets (XQuAD, MLQA, Apertium's English pairs), by
ISO 639-1 code."""

LANGUAGE_NAMES = {
    "en": "English", "es": "Spanish", "ca": "Catalan", "gl": "Galician", "eu": "Basque",
    "eo": "Esperanto", "de": "German", "zh": "Chinese", "ar": "Arabic", "el": "Greek",
    "hi": "Hindi", "ro": "Romanian", "ru": "Russian", "th": "Thai", "tr": "Turkish",
    "vi": "Vietnamese", "fr": "French", "it": "Italian", "pt": "Portuguese",
}


def language_name(code: str) -> str:
    """"Spanish" for "es"; an unknown code is returned as it is."""
    return LANGUAGE_NAMES.get(code, code)
