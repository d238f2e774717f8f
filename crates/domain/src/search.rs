//! Finding messages by their text: what a search asks for, and the one way
//! text is compared, so that every store finds the same messages.
//!
//! A query is whitespace-separated terms; a message matches when its text
//! contains every term as a substring, ignoring letter case. Text is
//! compared in its [folded](fold) form: composed (Unicode NFC) and
//! lowercased character by character, the same for any script, so that
//! `Ärger`, `ärger` and `A\u{308}rger` are one word and CJK text, which has
//! no spaces between words, is found by any part of it.
//!
//! ```
//! use confab_domain::{fold, SearchQuery};
//!
//! let query = SearchQuery::parse("  Hello  wörld ").unwrap();
//! assert_eq!(query.terms(), ["hello", "wörld"]);
//! assert!(query.matches(&fold("HELLO, WÖRLD!")));
//! assert!(!query.matches(&fold("hello world")));
//!
//! // Any script: a term is a substring, not a word.
//! assert!(SearchQuery::parse("東京都").unwrap().matches(&fold("私は東京都に住んでいます")));
//! // Too short a term, or nothing at all, is refused.
//! assert!(SearchQuery::parse("hi there").is_err());
//! assert!(SearchQuery::parse("   ").is_err());
//! // So is punctuation alone; beside a word it is found like any text.
//! assert!(SearchQuery::parse("...").is_err());
//! assert!(SearchQuery::parse("version 1.2.3").unwrap().matches("version 1.2.3 is out"));
//! ```

use unicode_normalization::UnicodeNormalization as _;

use crate::{DomainError, Field};

/// The most characters a query may have, spaces included.
pub const MAX_QUERY_CHARS: usize = 200;

/// The fewest characters a term may have: shorter ones would match too
/// much to be worth answering, and no trigram index could find them.
pub const MIN_TERM_CHARS: usize = 3;

/// The letters or digits in a row that at least one term of a query must
/// have. A term of punctuation (`...`, `-.-`) is found by no index that
/// reads words: every message of the searcher would have to be read for
/// it. Beside such a term, the other terms are checked on the messages
/// found by it.
pub const MIN_WORD_RUN: usize = 3;

/// `text` as searches compare it: composed (NFC), then each character
/// lowercased on its own (never by its neighbours, so that a Greek final
/// sigma folds like any other), then composed again.
pub fn fold(text: &str) -> String {
    text.nfc()
        .flat_map(char::to_lowercase)
        .map(|c| if c == 'ς' { 'σ' } else { c })
        .nfc()
        .collect()
}

/// A parsed search: its terms, folded, each at least [`MIN_TERM_CHARS`]
/// characters, without repeats, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    terms: Vec<String>,
}

impl SearchQuery {
    /// The query in `text`: 1 to [`MAX_QUERY_CHARS`] characters, no NUL,
    /// whose whitespace-separated terms each have at least
    /// [`MIN_TERM_CHARS`] characters, at least one of them with
    /// [`MIN_WORD_RUN`] letters or digits in a row (of any script). Every
    /// other character, `%`, `_`, `\` and quotes included, is text to
    /// find, never a wildcard.
    /// # Errors
    /// [`DomainError::Invalid`] on [`Field::SearchQuery`] saying which rule
    /// `text` breaks.
    pub fn parse(text: &str) -> Result<Self, DomainError> {
        let invalid = |rule| DomainError::invalid(Field::SearchQuery, rule);
        if text.chars().count() > MAX_QUERY_CHARS {
            return Err(invalid("must be at most 200 characters"));
        }
        if text.contains('\0') {
            return Err(invalid("must not contain the NUL character"));
        }
        let mut terms: Vec<String> = Vec::new();
        for raw in text.split_whitespace() {
            if raw.chars().count() < MIN_TERM_CHARS {
                return Err(invalid("must have terms of at least 3 characters each"));
            }
            let term = fold(raw);
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        if terms.is_empty() {
            return Err(invalid("must have at least one term"));
        }
        if !terms.iter().any(|t| has_word_run(t)) {
            return Err(invalid(
                "must have a term with at least 3 letters or digits in a row, such as a word \
                 or a number: punctuation alone cannot be searched (add a word that is \
                 near it in the text)",
            ));
        }
        Ok(Self { terms })
    }

    /// The terms, folded, in the order given.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Whether a text, already [folded](fold), contains every term.
    pub fn matches(&self, folded: &str) -> bool {
        self.terms.iter().all(|t| folded.contains(t.as_str()))
    }
}

/// Whether `term` has [`MIN_WORD_RUN`] letters or digits in a row.
fn has_word_run(term: &str) -> bool {
    let mut run = 0;
    term.chars().any(|c| {
        run = if c.is_alphanumeric() { run + 1 } else { 0 };
        run >= MIN_WORD_RUN
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_case_composition_and_final_sigma() {
        assert_eq!(fold("ÄRGER"), "ärger");
        assert_eq!(fold("A\u{308}rger"), "ärger");
        assert_eq!(fold("ΟΔΟΣ"), fold("οδος"));
        assert_eq!(fold("οδος"), "οδοσ");
        assert_eq!(fold("İstanbul").chars().count(), "i̇stanbul".chars().count());
        assert_eq!(fold("東京"), "東京");
    }

    #[test]
    fn terms_are_folded_and_kept_once() {
        let q = SearchQuery::parse("Foo\tbar FOO\n50%_x").expect("query");
        assert_eq!(q.terms(), ["foo", "bar", "50%_x"]);
        assert!(q.matches("foo and bar at 50%_x"));
        assert!(!q.matches("foo and bar at 50%"));
    }

    #[test]
    fn refuses_what_it_cannot_answer() {
        for bad in ["", "  ", "ab", "abc de", "abc\0def"] {
            let e = SearchQuery::parse(bad).expect_err(bad);
            assert!(
                matches!(
                    e,
                    DomainError::Invalid {
                        field: Field::SearchQuery,
                        ..
                    }
                ),
                "{bad:?}: {e}"
            );
        }
        assert!(SearchQuery::parse(&"x".repeat(200)).is_ok());
        assert!(SearchQuery::parse(&"x".repeat(201)).is_err());
        // Characters, not bytes.
        assert!(SearchQuery::parse(&"東".repeat(200)).is_ok());
        assert!(SearchQuery::parse("東京都").is_ok());
        assert!(SearchQuery::parse("東京").is_err());
    }

    #[test]
    fn a_query_needs_a_term_with_three_letters_or_digits_in_a_row() {
        for bad in ["...", "-.-", "a.b.c", "e()", "%%% ___", "a_b c-d", "12.5"] {
            let e = SearchQuery::parse(bad).expect_err(bad);
            assert!(e.to_string().contains("letters or digits"), "{bad:?}: {e}");
        }
        // One such term is enough: the others are checked on what it finds.
        for good in [
            "abc",
            "100%",
            "a.b.c version",
            "e() snake",
            "1.2.3 v42",
            "東京都",
            "Ärg",
        ] {
            assert!(SearchQuery::parse(good).is_ok(), "{good:?}");
        }
        // Letters of any script, digits of any script; not underscores.
        assert!(SearchQuery::parse("٣٤٥").is_ok());
        assert!(SearchQuery::parse("a_b_c").is_err());
    }
}
