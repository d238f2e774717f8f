//! Statements as capabilities of a connection: how a query function written
//! once, generic over [`crate::SqlBackend`], runs a statement on
//! `B::Conn` without a where-clause of its own.
//!
//! diesel proves that a statement runs on a connection against the
//! connection's concrete backend (its dialect, how each Rust value is bound
//! and read). Generic code cannot repeat that proof for an unknown
//! backend, so each statement that needs it is listed once as a capability
//! ([`Run`] for one that returns rows, [`Exec`] for one that counts them)
//! in its module's capability trait, which `SqlBackend::Conn` requires:
//! the proof is made where a store names its connection, once per
//! backend, and the query functions just call
//! [`Run::load_rows`], [`Run::get_row`] or [`Exec::exec`].
//!
//! Raw statements ([`crate::raw`]) need no listing to be executed: every
//! backend's `Db` is a [`crate::raw::RawDb`]. Their rows do, by row type
//! (`Run<RawQuery<Db>, Row>`), since reading a row names its columns'
//! Rust types.

use diesel::connection::Connection;
use diesel::query_dsl::methods::{ExecuteDsl, LoadQuery};
use diesel::{QueryResult, RunQueryDsl};

/// A connection that runs the statement `Q` and reads its rows as `U`.
pub trait Run<Q, U> {
    /// Every row (diesel's `load`).
    fn load_rows(&mut self, query: Q) -> QueryResult<Vec<U>>;
    /// The first row, `NotFound` when there is none (diesel's
    /// `get_result`); `.optional()` makes that `None`.
    fn get_row(&mut self, query: Q) -> QueryResult<U>;
}

impl<C, Q, U> Run<Q, U> for C
where
    C: Connection,
    Q: for<'a> LoadQuery<'a, C, U>,
{
    fn load_rows(&mut self, query: Q) -> QueryResult<Vec<U>> {
        query.load(self)
    }

    fn get_row(&mut self, query: Q) -> QueryResult<U> {
        query.get_result(self)
    }
}

/// A connection that executes the statement `Q` (rows it changed).
pub trait Exec<Q> {
    /// The number of rows the statement changed (diesel's `execute`).
    fn exec(&mut self, query: Q) -> QueryResult<usize>;
}

impl<C, Q> Exec<Q> for C
where
    C: Connection,
    Q: RunQueryDsl<C> + ExecuteDsl<C>,
{
    fn exec(&mut self, query: Q) -> QueryResult<usize> {
        query.execute(self)
    }
}
