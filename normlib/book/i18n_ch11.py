"""The strings chapter 11 prints and draws, in Korean and English: does a network need normalization?.

Kept apart from :mod:`normlib.book.i18n`, which merges every table and refuses a key defined twice;
the keys all start with ``ch11:``.
"""

# key: (Korean, English)
PAIRS = {
}
