use crate::{DomainError, Field};

/// How many items a page holds: 1 to 100, 10 by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimit(u8);

impl PageLimit {
    /// The page size when none is asked for.
    pub const DEFAULT: u8 = 10;
    /// A page size of `n` items.
    ///
    /// # Errors
    ///
    /// [`DomainError::Invalid`] on [`Field::PageLimit`] unless `n` is 1 to
    /// 100: a page never costs more than 100 items.
    pub fn new(n: i64) -> Result<Self, DomainError> {
        match u8::try_from(n) {
            Ok(v) if (1..=100).contains(&v) => Ok(Self(v)),
            _ => Err(DomainError::invalid(
                Field::PageLimit,
                "must be an integer from 1 to 100",
            )),
        }
    }
    /// The number of items.
    pub const fn get(self) -> u8 {
        self.0
    }
}

impl Default for PageLimit {
    fn default() -> Self {
        Self(Self::DEFAULT)
    }
}

/// Where a page starts: just after an item, or just before one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor<Id> {
    /// The page that follows this item in list order.
    After(Id),
    /// The page that precedes this item (items still in list order).
    Before(Id),
}

impl<Id> Cursor<Id> {
    /// The input this cursor came from.
    pub const fn field(&self) -> Field {
        match self {
            Self::After(_) => Field::PageAfter,
            Self::Before(_) => Field::PageBefore,
        }
    }
}

/// A request for one page of a list.
///
/// A plain pair (public fields): any size goes with any cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page<Id> {
    /// At most this many items.
    pub limit: PageLimit,
    /// Where the page starts; `None`: at the start of the list.
    pub cursor: Option<Cursor<Id>>,
}

impl<Id> Default for Page<Id> {
    fn default() -> Self {
        Self {
            limit: PageLimit::default(),
            cursor: None,
        }
    }
}

/// One page of results, in list order.
///
/// A plain carrier (public fields): whether more items follow is the
/// reader's finding, not something the items could contradict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paged<T> {
    /// The page's items, in list order.
    pub items: Vec<T>,
    /// Whether more items lie beyond this page in the direction of travel.
    pub has_more: bool,
}

impl<T> Paged<T> {
    /// The same page with each item turned by `f`.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Paged<U> {
        Paged {
            items: self.items.into_iter().map(f).collect(),
            has_more: self.has_more,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_bounds() {
        assert_eq!(PageLimit::default().get(), 10);
        assert!(PageLimit::new(0).is_err());
        assert!(PageLimit::new(101).is_err());
        assert!(PageLimit::new(-3).is_err());
        assert_eq!(PageLimit::new(100).map(PageLimit::get), Ok(100));
    }
}
