//! Group commit: SQLite's writers of this process commit together.
//!
//! SQLite has one writer at a time. Taking turns one transaction at a time,
//! every send paid a whole turn of its own: `BEGIN IMMEDIATE`, its
//! statements, `COMMIT` writing each page it touched to the WAL, and two
//! thread hand-offs; 32 concurrent senders queued behind that
//! (docs/performance.md). Here a writer queues its unit of work instead;
//! one of the queued writers (the leader) takes everything queued, runs it
//! in one transaction, each unit inside a savepoint of its own, commits
//! once, and answers each. Pages that several units touch (the rightmost
//! leaves of the message and event tables, their indexes) reach the WAL
//! once per batch instead of once per unit. While a batch runs, the next
//! one queues; when the leader is done it hands the lead to the first
//! writer queued, so the queue is served first come, first served.
//!
//! Each unit still commits entirely or not at all, and only its own
//! failure undoes it:
//!
//! - a unit that fails is rolled back to its savepoint, and the others go
//!   on (a send to a conversation the caller cannot see does not fail the
//!   sends beside it);
//! - a unit whose caller stopped waiting ([`Abandoned`]) before its turn
//!   does nothing; one abandoned while its own statements ran is rolled
//!   back to its savepoint; and the marks of all are looked at once more
//!   just before `COMMIT`: if one was set meanwhile, the whole batch rolls
//!   back and every unit in it is answered `Unavailable` (nothing written,
//!   may be retried), so that a request answered 503 never commits;
//! - a failure that ends SQLite's transaction itself (a full disk, an I/O
//!   error: the savepoint can no longer be rolled back to) stops the
//!   batch, and every unit in it is answered `Unavailable`;
//! - a unit that panics is answered with an error and rolled back to its
//!   savepoint; the batch goes on. A panic of the batch's own code (before
//!   `COMMIT`) answers each of its units that nothing was written, and the
//!   lead moves on.
//!
//! A batch of one runs exactly as before: `BEGIN IMMEDIATE`, its
//! statements, `COMMIT`, with no savepoint (so a request alone costs the
//! statements `tests/tests/http/statements.rs` counts).

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use confab_ports::StoreError;
use diesel::connection::SimpleConnection as _;
use diesel::sqlite::SqliteConnection;

use confab_store_sql::door::{unless_abandoned, Abandoned};
use confab_store_sql::error::Error;

/// At most this many units commit together; more wait for the next batch.
/// The benchmark's 32 connections fit in one.
const MAX_BATCH: usize = 64;

/// A queued writer's unit of work, its result kept by the closure itself
/// (its type is the writer's own).
type Work = Box<dyn FnOnce(&mut SqliteConnection) -> Result<(), Error> + Send>;

pub(crate) struct Unit {
    work: Work,
    caller: Caller,
}

/// Who waits for a unit: whether they still do, and where to answer.
struct Caller {
    abandoned: Abandoned,
    reply: SyncSender<Reply>,
}

/// A unit's reply channel and outcome, to be sent once its batch is done.
pub(crate) type Answer = (SyncSender<Reply>, Result<(), Error>);

/// What a queued writer hears: take the lead, or its unit's outcome.
pub(crate) enum Reply {
    Lead,
    Done(Result<(), Error>),
}

/// The writers of one store (cloning shares them).
#[derive(Clone, Default)]
pub(crate) struct Writers(Arc<Mutex<Queue>>);

#[derive(Default)]
struct Queue {
    /// Whether a writer is leading: running a batch, or told to run the next.
    leading: bool,
    units: VecDeque<Unit>,
}

impl Writers {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // The lock guards no invariant a panic could break half-way (pushes
        // and pops only).
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in a write transaction, alone or with the other writers
    /// queued at the same time, and answers its result once the
    /// transaction is committed (or `f`'s own error, or why nothing was
    /// written). `run_batch` runs one batch on one connection: see
    /// [`run_batch`], which the store calls with its connection and lock.
    pub(crate) fn write<T: Send + 'static>(
        &self,
        abandoned: &Abandoned,
        f: impl FnOnce(&mut SqliteConnection) -> Result<T, Error> + Send + 'static,
        run_batch: impl Fn(Vec<Unit>) -> Vec<Answer>,
    ) -> Result<T, Error> {
        let slot: Arc<Mutex<Option<T>>> = Arc::default();
        let out = slot.clone();
        let work: Work = Box::new(move |conn| {
            let value = f(conn)?;
            *out.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
            Ok(())
        });
        // Room for both messages a writer can be sent (the lead, then its
        // outcome), so that the leader never blocks on a send.
        let (reply, replies) = sync_channel(2);
        let lead = {
            let mut queue = self.queue();
            queue.units.push_back(Unit {
                work,
                caller: Caller {
                    abandoned: abandoned.clone(),
                    reply,
                },
            });
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            self.lead(&run_batch);
        }
        loop {
            match replies.recv() {
                Ok(Reply::Lead) => self.lead(&run_batch),
                Ok(Reply::Done(outcome)) => {
                    outcome?;
                    let value = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                    return value.ok_or(Error::Abandoned);
                }
                // Dropped unanswered: its batch panicked before `COMMIT`
                // (see `lead`), so nothing of it was written.
                Err(_) => return Err(Error::Abandoned),
            }
        }
    }

    /// Runs one batch of what is queued, hands the lead on, then answers
    /// the batch's writers.
    fn lead(&self, run_batch: &impl Fn(Vec<Unit>) -> Vec<Answer>) {
        let batch: Vec<Unit> = {
            let mut queue = self.queue();
            let n = queue.units.len().min(MAX_BATCH);
            queue.units.drain(..n).collect()
        };
        // A panic outside the units (theirs are caught) must not leave the
        // lead taken for good, with every later writer queued behind it:
        // the batch's units are dropped unanswered (their callers hear that
        // nothing was written: the transaction never reached `COMMIT`, and
        // its connection, still inside it, is not pooled again), and the
        // lead moves on.
        let answers = catch_unwind(AssertUnwindSafe(|| run_batch(batch))).unwrap_or_else(|panic| {
            tracing::error!(
                panic = panic_message(panic.as_ref()),
                "a batch of SQLite writes panicked"
            );
            Vec::new()
        });
        {
            let mut queue = self.queue();
            match queue.units.front() {
                // The next batch starts while these writers wake.
                Some(next) => {
                    let _ = next.caller.reply.send(Reply::Lead);
                }
                None => queue.leading = false,
            }
        }
        for (reply, outcome) in answers {
            let _ = reply.send(Reply::Done(outcome));
        }
    }
}

/// Runs `batch` in one transaction on `conn` (which the caller checked
/// out while holding the store's write lock), as the module docs say, and
/// pairs each unit's reply channel with its outcome.
pub(crate) fn run_batch(conn: &mut SqliteConnection, batch: Vec<Unit>) -> Vec<Answer> {
    if batch.len() == 1 {
        let Some(unit) = batch.into_iter().next() else {
            return Vec::new();
        };
        let Unit { work, caller } = unit;
        let outcome = caller.abandoned.check().and_then(|()| {
            conn.immediate_transaction(unless_abandoned(&caller.abandoned, |c| caught(work, c)))
        });
        return vec![(caller.reply, outcome)];
    }

    let mut outcomes: Vec<(Caller, Result<(), Error>)> = Vec::with_capacity(batch.len());
    let mut pending = batch.into_iter();
    let committed = conn.immediate_transaction(|conn| {
        for Unit { work, caller } in pending.by_ref() {
            if caller.abandoned.is_set() {
                outcomes.push((caller, Err(Error::Abandoned)));
                continue;
            }
            // A failure of the savepoint's own statements ends the batch,
            // and every unit that had not failed on its own hears that
            // nothing was written (below). Rolling back to the savepoint
            // fails when SQLite's transaction already ended (a full disk,
            // an I/O error): stopping then is what keeps a later unit from
            // running, and committing, outside the batch's transaction.
            if let Err(e) = conn.batch_execute("SAVEPOINT unit") {
                outcomes.push((caller, Ok(())));
                return Err(e.into());
            }
            let outcome = caught(work, conn).and_then(|()| caller.abandoned.check());
            let closed = match outcome {
                Ok(()) => conn.batch_execute("RELEASE unit"),
                Err(_) => conn.batch_execute("ROLLBACK TO unit; RELEASE unit"),
            };
            outcomes.push((caller, outcome));
            closed?;
        }
        // The last look before COMMIT (see the module docs).
        if outcomes
            .iter()
            .any(|(caller, outcome)| outcome.is_ok() && caller.abandoned.is_set())
        {
            return Err(Error::Abandoned);
        }
        Ok(())
    });
    match committed {
        Ok(()) => outcomes
            .into_iter()
            .map(|(caller, outcome)| (caller.reply, outcome))
            .collect(),
        Err(e) => {
            tracing::warn!(error = ?e, units = outcomes.len(), "a batch of SQLite writes rolled back");
            let mut answers: Vec<_> = outcomes
                .into_iter()
                .map(|(caller, outcome)| {
                    // A unit that failed on its own keeps its own answer:
                    // its savepoint was rolled back either way.
                    let outcome = match outcome {
                        Ok(()) => Err(not_written(&e)),
                        Err(own) => Err(own),
                    };
                    (caller.reply, outcome)
                })
                .collect();
            answers.extend(fail_all(pending.collect(), &e));
            answers
        }
    }
}

/// `work`, with a panic caught and made its error: the other units of its
/// batch go on, and its caller is answered as when the thread of a lone
/// write panicked.
fn caught(work: Work, conn: &mut SqliteConnection) -> Result<(), Error> {
    catch_unwind(AssertUnwindSafe(|| work(conn))).unwrap_or_else(|panic| {
        let what = panic_message(panic.as_ref());
        tracing::error!(panic = what, "a SQLite write panicked");
        Err(Error::Store(StoreError::Other(
            format!("a write panicked: {what}").into(),
        )))
    })
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Every unit of `batch` answered: nothing of it was written, because of
/// `e` (the batch failed, or no connection could be had for it).
pub(crate) fn fail_all(batch: Vec<Unit>, e: &Error) -> Vec<Answer> {
    batch
        .into_iter()
        .map(|unit| (unit.caller.reply, Err(not_written(e))))
        .collect()
}

/// The answer of a unit that did its part but was not committed, because
/// of `e` (another unit's abandonment, or a failure of the batch): it may
/// be retried.
fn not_written(e: &Error) -> Error {
    let why = match e {
        Error::Abandoned => "another write of its batch was abandoned".to_owned(),
        other => format!("its batch failed: {other:?}"),
    };
    Error::Store(StoreError::Unavailable(
        format!("nothing was written: {why}").into(),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::Duration;

    use confab_ports::StoreError;
    use diesel::connection::SimpleConnection as _;
    use diesel::prelude::*;
    use diesel::sql_types::Integer;
    use diesel::sqlite::SqliteConnection;

    use super::{run_batch, Answer, Writers};
    use confab_store_sql::door::Abandoned;
    use confab_store_sql::error::Error;

    /// One connection and its writers, as a store has them.
    struct Db {
        conn: Mutex<SqliteConnection>,
        writers: Writers,
    }

    type Unit = Box<dyn FnOnce(&mut SqliteConnection) -> Result<(), Error> + Send>;

    fn db() -> Arc<Db> {
        let mut conn = SqliteConnection::establish(":memory:").expect("open");
        conn.batch_execute("CREATE TABLE t (n INTEGER NOT NULL)")
            .expect("table");
        Arc::new(Db {
            conn: Mutex::new(conn),
            writers: Writers::default(),
        })
    }

    fn write(db: &Db, abandoned: &Abandoned, unit: Unit) -> Result<(), Error> {
        db.writers.write(abandoned, unit, |batch| {
            let mut conn = db.conn.lock().expect("connection");
            run_batch(&mut conn, batch)
        })
    }

    fn insert(conn: &mut SqliteConnection, n: i32) -> Result<(), Error> {
        diesel::sql_query("INSERT INTO t (n) VALUES (?)")
            .bind::<Integer, _>(n)
            .execute(conn)?;
        Ok(())
    }

    fn inserts(n: i32) -> Unit {
        Box::new(move |conn| insert(conn, n))
    }

    fn rows(db: &Db) -> Vec<i32> {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = Integer)]
            n: i32,
        }
        let mut conn = db.conn.lock().expect("connection");
        let rows: Vec<Row> = diesel::sql_query("SELECT n FROM t ORDER BY n")
            .load(&mut *conn)
            .expect("rows");
        rows.into_iter().map(|r| r.n).collect()
    }

    fn queued(db: &Db) -> usize {
        db.writers.queue().units.len()
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        for _ in 0..5_000 {
            if done() {
                return;
            }
            thread::sleep(Duration::from_millis(1));
        }
        panic!("timed out waiting until {what}");
    }

    /// Queues `units` in their order behind a first write (which inserts
    /// 0 and holds the lead until all are queued), so that they run as one
    /// batch; returns their answers in the same order.
    fn one_batch(db: &Arc<Db>, units: Vec<(Abandoned, Unit)>) -> Vec<Result<(), Error>> {
        let release = Arc::new(AtomicBool::new(false));
        let first = {
            let db = db.clone();
            let release = release.clone();
            thread::spawn(move || {
                let unit: Unit = Box::new(move |conn| {
                    wait_until("all units are queued", || release.load(Ordering::SeqCst));
                    insert(conn, 0)
                });
                write(&db, &Abandoned::default(), unit)
            })
        };
        wait_until("the first write leads", || {
            db.writers.queue().leading && queued(db) == 0
        });
        let mut writers = Vec::new();
        for (i, (abandoned, unit)) in units.into_iter().enumerate() {
            let db2 = db.clone();
            writers.push(thread::spawn(move || write(&db2, &abandoned, unit)));
            wait_until("the unit is queued", || queued(db) == i + 1);
        }
        release.store(true, Ordering::SeqCst);
        first
            .join()
            .expect("first")
            .expect("the first write commits");
        writers
            .into_iter()
            .map(|w| w.join().expect("writer"))
            .collect()
    }

    /// Every unit of a batch after the first write was answered 503 and
    /// none is stored; the connection is left outside any transaction,
    /// ready for the next write.
    fn assert_nothing_of_the_batch_written(db: &Db, answers: &[Result<(), Error>]) {
        for answer in answers {
            assert!(
                matches!(answer, Err(Error::Store(StoreError::Unavailable(_)))),
                "{answer:?}"
            );
        }
        assert_eq!(rows(db), vec![0]);
        write(db, &Abandoned::default(), inserts(100)).expect("a write after");
        assert_eq!(rows(db), vec![0, 100]);
    }

    #[test]
    fn a_batch_commits_each_unit_that_succeeds_and_only_its_own_failure_undoes_a_unit() {
        let db = db();
        let gone = Abandoned::default();
        gone.set();
        let leaves = Abandoned::default();
        let leaving = leaves.clone();
        let answers = one_batch(
            &db,
            vec![
                (Abandoned::default(), inserts(1)),
                (
                    Abandoned::default(),
                    Box::new(|conn| {
                        insert(conn, 2)?;
                        Err(StoreError::NotFound.into())
                    }),
                ),
                (
                    Abandoned::default(),
                    Box::new(|conn| {
                        insert(conn, 3)?;
                        panic!("a unit that panics");
                    }),
                ),
                (gone, inserts(4)),
                (Abandoned::default(), inserts(5)),
                (
                    leaves,
                    Box::new(move |conn| {
                        insert(conn, 6)?;
                        leaving.set();
                        Ok(())
                    }),
                ),
                (Abandoned::default(), inserts(7)),
            ],
        );
        assert!(answers[0].is_ok(), "{:?}", answers[0]);
        assert!(
            matches!(answers[1], Err(Error::Store(StoreError::NotFound))),
            "{:?}",
            answers[1]
        );
        assert!(
            matches!(answers[2], Err(Error::Store(StoreError::Other(_)))),
            "{:?}",
            answers[2]
        );
        assert!(
            matches!(answers[3], Err(Error::Abandoned)),
            "{:?}",
            answers[3]
        );
        assert!(answers[4].is_ok(), "{:?}", answers[4]);
        assert!(
            matches!(answers[5], Err(Error::Abandoned)),
            "{:?}",
            answers[5]
        );
        assert!(answers[6].is_ok(), "{:?}", answers[6]);
        assert_eq!(rows(&db), vec![0, 1, 5, 7]);
    }

    #[test]
    fn a_caller_gone_between_its_unit_and_the_commit_rolls_the_whole_batch_back() {
        let db = db();
        let late = Abandoned::default();
        let leaving = late.clone();
        let answers = one_batch(
            &db,
            vec![
                (late, inserts(1)),
                (
                    Abandoned::default(),
                    Box::new(move |conn| {
                        // The first unit's caller stops waiting after its
                        // unit ran: it is answered 503, so nothing of the
                        // batch may commit.
                        leaving.set();
                        insert(conn, 2)
                    }),
                ),
            ],
        );
        assert_nothing_of_the_batch_written(&db, &answers);
    }

    #[test]
    fn a_unit_that_ends_the_transaction_stops_the_batch_and_nothing_after_it_runs() {
        let db = db();
        let answers = one_batch(
            &db,
            vec![
                (Abandoned::default(), inserts(1)),
                (
                    Abandoned::default(),
                    Box::new(|conn| {
                        insert(conn, 2)?;
                        // As SQLite does on a full disk or an I/O error.
                        conn.batch_execute("ROLLBACK")?;
                        Ok(())
                    }),
                ),
                (Abandoned::default(), inserts(3)),
            ],
        );
        assert_nothing_of_the_batch_written(&db, &answers);
    }

    #[test]
    fn a_batch_that_panics_answers_its_writers_and_hands_the_lead_on() {
        let db = db();
        let outcome = db.writers.write(
            &Abandoned::default(),
            |conn| insert(conn, 1),
            |_batch| -> Vec<Answer> { panic!("the batch itself panics") },
        );
        assert!(matches!(outcome, Err(Error::Abandoned)), "{outcome:?}");
        assert!(!db.writers.queue().leading);
        write(&db, &Abandoned::default(), inserts(2)).expect("a write after");
        assert_eq!(rows(&db), vec![2]);
    }

    #[test]
    fn concurrent_writers_each_get_their_own_value() {
        let db = db();
        let writers: Vec<_> = (1..=64)
            .map(|n| {
                let db = db.clone();
                thread::spawn(move || {
                    db.writers.write(
                        &Abandoned::default(),
                        move |conn| {
                            insert(conn, n)?;
                            Ok(n * 10)
                        },
                        |batch| {
                            let mut conn = db.conn.lock().expect("connection");
                            run_batch(&mut conn, batch)
                        },
                    )
                })
            })
            .collect();
        for (n, w) in (1..=64).zip(writers) {
            assert_eq!(w.join().expect("writer").expect("written"), n * 10);
        }
        assert_eq!(rows(&db), (1..=64).collect::<Vec<_>>());
        assert!(!db.writers.queue().leading);
    }
}
