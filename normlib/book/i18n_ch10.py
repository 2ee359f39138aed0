"""The strings chapter 10 prints and draws, in Korean and English: where the normalization layer goes.

Kept apart from :mod:`normlib.book.i18n`, which merges every table and refuses a key defined twice;
the keys all start with ``ch10:``.
"""

# key: (Korean, English)
PAIRS = {
}
