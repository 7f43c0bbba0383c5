use super::*;
use crate::engine::rng::mix64;
use crate::engine::sched::Scheduler;

/// A toy model: each event is a token of a partition (or a global one, `part == GLOBAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tok {
    part: u16,
    id: u64,
}

const GLOBAL: u16 = u16::MAX;
const PARTS: u16 = 4;
const LOOKAHEAD: TimePs = 100;
const END: TimePs = 20_000;

fn classify(t: &Tok) -> Route {
    if t.part == GLOBAL {
        Route::Global
    } else {
        Route::Own
    }
}

/// What each partition (and the global lane, last) saw: (time, token id), in order.
type Traces = Vec<Vec<(TimePs, u64)>>;

/// Handles one token, which has one successor (so the population stays the same): coarse
/// times (multiples of 10) so that ties are common; most successors stay in their
/// partition, some go to another one at the lookahead or later, a few are global, and a
/// global token's successor goes to any partition at once.
fn handle(q: &mut impl Scheduler<Tok>, now: TimePs, tok: Tok) {
    if now + 2 * LOOKAHEAD >= END {
        return;
    }
    let r = mix64(tok.id ^ now.rotate_left(17));
    let id = tok.id.wrapping_mul(31).wrapping_add(now);
    if tok.part == GLOBAL {
        let part = ((r >> 8) % u64::from(PARTS)) as u16;
        q.schedule(now + 10 * (r % 2), Tok { part, id });
    } else if r.is_multiple_of(23) {
        q.schedule(
            now + LOOKAHEAD + 10 * ((r >> 40) % 3),
            Tok { part: GLOBAL, id },
        );
    } else if r.is_multiple_of(3) {
        let to = ((r >> 20) % u64::from(PARTS)) as u16;
        let at = now + LOOKAHEAD + 10 * ((r >> 30) % 2);
        q.schedule_in(to, at, Tok { part: to, id });
    } else {
        q.schedule(now + 10 * (r % 4), Tok { part: tok.part, id });
    }
}

/// The toy model's queue at the start: four tokens per partition and one global, all at
/// time 0, partitioned.
fn toy_queue() -> EventQueue<Tok> {
    let mut q = EventQueue::new();
    for id in 0..4 * u64::from(PARTS) {
        let part = (id % u64::from(PARTS)) as u16;
        q.schedule(0, Tok { part, id });
    }
    q.schedule(
        0,
        Tok {
            part: GLOBAL,
            id: 99,
        },
    );
    q.partition(usize::from(PARTS), LOOKAHEAD, classify);
    q
}

/// Runs the toy model to END in slices of `step_ps`, lanes forwards or backwards.
fn run(reversed: bool, step_ps: TimePs) -> (Traces, u64) {
    let mut q = toy_queue();
    q.set_lane_order_reversed(reversed);
    let mut traces: Traces = vec![Vec::new(); usize::from(PARTS) + 1];
    let mut horizon = 0;
    while horizon < END {
        horizon = (horizon + step_ps).min(END);
        route_unrouted(&mut q);
        while let Some(e) = q.pop_until(horizon) {
            let lane = if e.kind.part == GLOBAL {
                usize::from(PARTS)
            } else {
                usize::from(e.kind.part)
            };
            assert_eq!(
                q.current_partition().map(usize::from),
                (lane < usize::from(PARTS)).then_some(lane),
                "an event ran in the lane it belongs to"
            );
            traces[lane].push((e.time_ps, e.kind.id));
            handle(&mut q, e.time_ps, e.kind);
            route_unrouted(&mut q);
        }
        q.advance_to(horizon);
    }
    assert_eq!(q.early_mail(), 0);
    (traces, q.events_processed())
}

fn route_unrouted(q: &mut EventQueue<Tok>) {
    let mut v = q.take_unrouted();
    for &(t, tok) in &v {
        q.route((tok.part != GLOBAL).then_some(tok.part), t, tok);
    }
    v.clear();
    q.give_back_unrouted(v);
}

#[test]
fn lane_order_and_run_slices_do_not_change_any_partitions_order() {
    let (base, events) = run(false, END);
    assert!(events > 5_000, "a busy model: {events} events");
    assert!(base[usize::from(PARTS)].len() > 20, "global events ran");
    for (reversed, step) in [(true, END), (false, 333), (true, 70), (false, 1)] {
        let (other, n) = run(reversed, step);
        assert_eq!(n, events, "reversed {reversed}, step {step}");
        assert!(
            other == base,
            "reversed {reversed}, step {step}: traces differ"
        );
    }
}

#[test]
fn after_a_slice_the_time_is_the_latest_any_lane_reached() {
    let mut q = EventQueue::new();
    q.schedule(10, Tok { part: 0, id: 1 });
    q.schedule(70, Tok { part: 1, id: 2 });
    q.partition(2, LOOKAHEAD, classify);
    route_unrouted(&mut q);
    let times: Vec<TimePs> = std::iter::from_fn(|| q.pop_until(TimePs::MAX))
        .map(|e| e.time_ps)
        .collect();
    assert_eq!(times, vec![10, 70]);
    assert_eq!(q.now(), 70);
}

#[test]
fn each_lane_runs_in_time_order_and_globals_see_every_lane_stopped() {
    let (traces, _) = run(true, END);
    for t in &traces {
        assert!(t.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}

#[test]
fn mail_sooner_than_the_window_end_is_counted() {
    let mut q = EventQueue::new();
    q.schedule(0, Tok { part: 0, id: 1 });
    q.partition(2, LOOKAHEAD, classify);
    route_unrouted(&mut q);
    let e = q.pop_until(TimePs::MAX).unwrap();
    q.schedule_in(1, e.time_ps + LOOKAHEAD - 1, Tok { part: 1, id: 2 });
    assert_eq!(q.early_mail(), 1);
    q.schedule_in(1, e.time_ps + LOOKAHEAD, Tok { part: 1, id: 3 });
    assert_eq!(q.early_mail(), 1);
}

#[test]
fn an_ordinary_queue_ignores_partitions() {
    let mut q = EventQueue::new();
    q.schedule_in(3, 5, Tok { part: 3, id: 1 });
    q.schedule(5, Tok { part: 0, id: 2 });
    let order: Vec<u64> = std::iter::from_fn(|| q.pop_until(TimePs::MAX))
        .map(|e| e.kind.id)
        .collect();
    assert_eq!(order, vec![1, 2]);
    assert!(q.take_unrouted().is_empty());
}

/// Lanes 1 and 3 run "on another thread" (here, this one, at each window's opening,
/// through `shared_lanes` as a helper runs them): the mail for them waits in their inboxes
/// and enters them as they open, and every partition sees what it sees on one thread.
#[test]
fn lanes_run_elsewhere_take_their_mail_in_the_same_order() {
    let (base, events) = run(false, END);
    let mut q = toy_queue();
    q.set_own_lanes(&[0, 2]);
    q.meet_at_windows(true);
    let mut traces: Traces = vec![Vec::new(); usize::from(PARTS) + 1];
    route_unrouted(&mut q);
    let mut elsewhere = 0;
    loop {
        while let Some(e) = q.pop_until(END) {
            let lane = e.kind.part.min(PARTS);
            traces[usize::from(lane)].push((e.time_ps, e.kind.id));
            handle(&mut q, e.time_ps, e.kind);
            route_unrouted(&mut q);
        }
        match q.take_meeting() {
            Some(Meeting::Open { last_ps }) => {
                let shared = q.shared_lanes().unwrap();
                for i in [1, 3] {
                    // SAFETY: this thread runs nothing else until the lane is done.
                    let mut s = unsafe { shared.open(i, last_ps) };
                    while let Some(e) = s.pop() {
                        traces[i].push((e.time_ps, e.kind.id));
                        handle(&mut s, e.time_ps, e.kind);
                        elsewhere += 1;
                    }
                }
            }
            Some(Meeting::Close) => {}
            None => break,
        }
    }
    assert!(
        elsewhere > 1_000,
        "lanes 1 and 3 ran {elsewhere} events elsewhere"
    );
    assert_eq!(q.events_processed(), events);
    assert!(traces == base, "traces differ");
}
