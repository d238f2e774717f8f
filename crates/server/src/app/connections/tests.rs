use super::*;

#[test]
fn the_budget_keeps_descriptors_in_reserve() {
    let l = ConnectionLimits::from_open_files(1024, None).expect("1024");
    // An eighth of the limit in reserve; of the rest, an eighth for
    // fast refusals and seven eighths served at two descriptors each.
    assert_eq!((l.accepted, l.budget), (504, 392));
    assert_eq!(2 * l.budget + (l.accepted - l.budget), 1024 - 128);
    let l = ConnectionLimits::from_open_files(256, None).expect("256");
    assert_eq!((l.accepted, l.budget), (108, 84));
    let l = ConnectionLimits::from_open_files(1024, Some(100)).expect("explicit");
    assert_eq!((l.accepted, l.budget), (796, 100));
    let e = ConnectionLimits::from_open_files(1024, Some(448)).expect_err("too many");
    assert!(e.to_string().contains("CONFAB_MAX_CONNECTIONS"), "{e}");
    assert!(ConnectionLimits::from_open_files(64, None).is_err());
}

#[test]
fn each_address_has_a_share_and_the_budget_a_reserve() {
    let l = ConnectionLimits::from_open_files(1024, None).expect("1024");
    assert_eq!(
        (l.per_address, l.pending_per_address, l.reserve),
        (49, 12, 98)
    );
    // At least 16 and 8.
    let l = ConnectionLimits::from_open_files(1024, Some(40)).expect("40");
    assert_eq!(
        (l.per_address, l.pending_per_address, l.reserve),
        (16, 8, 10)
    );
    let l = ConnectionLimits::from_open_files(1024, Some(4)).expect("4");
    assert_eq!((l.per_address, l.pending_per_address), (16, 8));
    let l = l.with_shares(Some(3), Some(2)).expect("explicit");
    assert_eq!((l.per_address, l.pending_per_address), (3, 2));
    let e = l.with_shares(Some(3), Some(4)).expect_err("pending > open");
    assert!(
        e.to_string().contains("CONFAB_MAX_PENDING_PER_ADDRESS"),
        "{e}"
    );
}

fn gate(budget: usize, per_address: usize, pending: usize) -> Arc<Gate> {
    let limits = ConnectionLimits::from_open_files(1024, Some(budget))
        .and_then(|l| l.with_shares(Some(per_address), Some(pending)))
        .expect("limits");
    Gate::new(limits, "10.0.0.0/8".parse().expect("proxies"))
}

fn ticket(admitted: Admitted) -> ConnectionTicket {
    match admitted {
        Admitted::Ticket(t) => t,
        Admitted::Refused(e) => panic!("refused: {e:?}"),
    }
}

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().expect("ip"))
}

#[test]
fn an_address_past_its_share_is_refused_and_others_are_not() {
    let g = gate(100, 4, 2);
    let a = ip("192.0.2.1");
    let first = ticket(g.admit(a, None));
    let second = ticket(g.admit(a, None));
    // Both still wait for their heads: a third may not.
    assert!(matches!(g.admit(a, None), Admitted::Refused(_)));
    // Another address is not concerned, nor a trusted proxy.
    let _other = ticket(g.admit(ip("192.0.2.2"), None));
    let proxied: Vec<_> = (0..6)
        .map(|_| ticket(g.admit(ip("10.1.2.3"), None)))
        .collect();
    // Heads arrive: two more connections fit, up to four open.
    g.head_arrived(first.id);
    g.head_arrived(second.id);
    let third = ticket(g.admit(a, None));
    let _fourth = ticket(g.admit(a, None));
    g.head_arrived(third.id);
    assert!(matches!(g.admit(a, None), Admitted::Refused(_)), "open");
    // A closed connection gives its place back.
    drop(third);
    let _again = ticket(g.admit(a, None));
    assert_eq!(g.counts().0, 1 + 6 + 4);
    drop(proxied);
    assert_eq!(g.counts().0, 5);
}

#[test]
fn bodies_in_flight_count_in_their_address_s_share() {
    let g = gate(100, 8, 2);
    // Through a proxy: the forwarded address's bodies.
    let client: IpAddr = "198.51.100.7".parse().expect("ip");
    let one = g.body_started(client).expect("first");
    let _two = g.body_started(client).expect("second");
    assert!(g.body_started(client).is_none(), "a third body");
    assert!(g
        .body_started("198.51.100.8".parse().expect("ip"))
        .is_some());
    drop(one);
    assert!(g.body_started(client).is_some(), "a body ended");
    // A direct connection: its wait for a head and then its body are
    // one place.
    let c = ip("192.0.2.9");
    let t = ticket(g.admit(c, None));
    let _u = ticket(g.admit(c, None));
    g.head_arrived(t.id);
    let body = g.body_started(c.expect("ip")).expect("its body");
    drop(body);
    g.answered(t.id);
    assert!(matches!(g.admit(c, None), Admitted::Refused(_)));
}

#[test]
fn the_last_quarter_of_the_budget_is_a_reserve() {
    let g = gate(8, 8, 8);
    let tickets: Vec<_> = (0..8)
        .map(|i| ticket(g.admit(ip(&format!("192.0.2.{i}")), None)))
        .collect();
    let flags: Vec<_> = tickets.iter().map(|t| (t.over, t.reserve_only)).collect();
    assert_eq!(
        flags,
        [
            (false, false),
            (false, false),
            (false, false),
            (false, false),
            (false, false),
            (false, false),
            (false, true),
            (false, true)
        ]
    );
    let past = ticket(g.admit(ip("192.0.2.100"), None));
    assert!(past.over);
}

#[test]
fn a_connection_waits_again_once_every_request_on_it_is_answered() {
    let g = gate(100, 8, 8);
    let t = ticket(g.admit(ip("192.0.2.1"), None));
    assert_eq!(g.counts(), (1, 1));
    // Two pipelined requests: it waits again after the second answer only.
    g.head_arrived(t.id);
    g.head_arrived(t.id);
    assert_eq!(g.counts(), (1, 0));
    g.answered(t.id);
    assert_eq!(g.counts(), (1, 0));
    g.answered(t.id);
    assert_eq!(g.counts(), (1, 1));
    drop(t);
    assert_eq!(g.counts(), (0, 0));
}

#[test]
fn a_connection_shut_for_a_newcomer_gives_its_place_up_at_once() {
    // A budget of 8 (a reserve of 2), filled by connections that never
    // send a head, older than the grace.
    let g = gate(8, 16, 8);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let at = listener.local_addr().expect("addr");
    let mut sockets = Vec::new();
    for _ in 0..11 {
        let _client = std::net::TcpStream::connect(at).expect("connect");
        sockets.push((_client, listener.accept().expect("accept").0));
    }
    let mut tickets = Vec::new();
    for (i, (_, server)) in sockets.iter().take(8).enumerate() {
        let t = ticket(g.admit(ip(&format!("192.0.2.{i}")), Some(SockRef::from(server))));
        assert!(!t.over, "connection {i} is within the budget");
        tickets.push(t);
    }
    std::thread::sleep(PRESSURE_GRACE + Duration::from_millis(100));
    // Three newcomers in a row, while the connections shut for them
    // have not closed yet (their tickets live): each finds room.
    for (i, (_, server)) in sockets.iter().skip(8).enumerate() {
        let t = ticket(g.admit(ip("198.51.100.1"), Some(SockRef::from(server))));
        assert!(
            !t.over,
            "newcomer {i} finds the room a shut connection made"
        );
        assert!(t.reserve_only, "newcomer {i} is on the reserve");
        tickets.push(t);
    }
    assert_eq!(g.state().shutting, 3);
    // Once the shut ones close, nothing is counted twice.
    let shut: Vec<u64> = g
        .state()
        .conns
        .iter()
        .filter(|(_, c)| c.shut)
        .map(|(id, _)| *id)
        .collect();
    tickets.retain(|t| !shut.contains(&t.id));
    assert_eq!(g.state().shutting, 0);
    assert_eq!(g.counts().0, 8);
    drop(tickets);
    assert_eq!(g.counts().0, 0);
}
