//! Socket, channel and slot of a DIMM from its SMBIOS locator strings.
//!
//! Boards name slots in a handful of styles; the ones recognised here name
//! the socket and the channel outright:
//!
//! | Device Locator | Bank Locator | socket, channel, slot |
//! |---|---|---|
//! | `CPU0_DIMM_A1`, `CPU1_DIMMB2` | any | 0 A 1, 1 B 2 |
//! | `P1-DIMMB2` (Supermicro) | any | 1 B 2 |
//! | `DIMM_P0_C1`, `DIMM_P0_A0` | any | 0 C 1, 0 A 0 |
//! | `PROC 1 DIMM A1` | any | 1 A 1 |
//! | `DIMM 0` | `P0 CHANNEL A` (AMD) | 0 A 0 |
//! | `DIMM_A1` | `P0_Node0_Channel1_Dimm0` | 0 0.1 0 (the node, a die, qualifies the channel) |
//! | `ChannelA-DIMM0` | `BANK 0` (desktops) | - A 0 |
//!
//! Anything else (`DIMM 0` alone, Dell's `A1`, HPE's `PROC 1 DIMM 1`, whose
//! numbers map to channels only through a board-specific table) leaves the
//! channel unknown: the DIMM is "ungrouped", never guessed at.
//!
//! Socket numbers: boards count from 0 (`CPU0`) or from 1 (`CPU1`, `P1`);
//! [`group_dimms`] renumbers them so that the lowest one any slot names is
//! socket 0, as Linux numbers packages. On a one-socket machine a locator
//! that names a channel but no socket is socket 0.

use crate::smbios::Dimm;

/// What one pair of locator strings says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The socket number as written on the board (not yet renumbered).
    pub socket_label: Option<u32>,
    pub channel: Option<String>,
    pub slot: Option<u32>,
}

/// Reads socket, channel and slot from a Device Locator and Bank Locator.
pub fn parse_place(locator: Option<&str>, bank: Option<&str>) -> Place {
    let mut place = Place::default();
    // The device locator names the slot itself; the bank locator fills in
    // what it leaves out (AMD boards put socket and channel there).
    for text in [locator, bank].into_iter().flatten() {
        let found = scan(&tokens(text));
        place.socket_label = place.socket_label.or(found.socket_label);
        place.channel = place.channel.or(found.channel);
        place.slot = place.slot.or(found.slot);
    }
    place
}

/// Upper-case words split at `_`, `-`, blanks, `/` and `.`.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| matches!(c, '_' | '-' | '/' | '.') || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_uppercase)
        .collect()
}

fn number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `A1` -> (A, 1): one channel letter and a slot number. `P` names a
/// socket (`P0`), never a channel: no platform has sixteen channels.
fn letter_slot(text: &str) -> Option<(String, u32)> {
    let mut chars = text.chars();
    let letter = chars.next().filter(|c| c.is_ascii_uppercase() && *c != 'P')?;
    Some((letter.to_string(), number(chars.as_str())?))
}

/// A word that is a prefix followed by a number (`CPU0`), or the prefix
/// alone with the number as the next word (`PROC 1`). Returns the number and
/// how many words it used.
fn prefixed(words: &[String], i: usize, prefix: &str) -> Option<(u32, usize)> {
    let rest = words[i].strip_prefix(prefix)?;
    if rest.is_empty() {
        return Some((number(words.get(i + 1)?)?, 2));
    }
    Some((number(rest)?, 1))
}

fn scan(words: &[String]) -> Place {
    let mut place = Place::default();
    let mut node: Option<u32> = None;
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let step = if let Some((n, used)) = ["CPU", "PROC", "SOCKET"]
            .iter()
            .find_map(|p| prefixed(words, i, p))
        {
            place.socket_label.get_or_insert(n);
            used
        } else if let Some(n) = w.strip_prefix('P').and_then(number) {
            place.socket_label.get_or_insert(n);
            1
        } else if let Some(rest) = w.strip_prefix("CHANNEL") {
            // `CHANNEL A`, `CHANNELA`, `Channel1`
            let (name, used) = match rest {
                "" => (words.get(i + 1).cloned(), 2),
                _ => (Some(rest.to_string()), 1),
            };
            if let Some(name) = name.filter(|n| channel_name(n)) {
                place.channel.get_or_insert(name);
            }
            used
        } else if let Some(rest) = w.strip_prefix("NODE").filter(|r| !r.is_empty()) {
            node = number(rest);
            1
        } else if let Some(rest) = w.strip_prefix("DIMM") {
            dimm_word(words, i, rest, &mut place)
        } else {
            // A bare `C1` after a socket word: `DIMM_P0_C1`.
            if place.socket_label.is_some() && place.channel.is_none() {
                if let Some((ch, slot)) = letter_slot(w) {
                    place.channel = Some(ch);
                    place.slot.get_or_insert(slot);
                }
            }
            1
        };
        i += step;
    }
    // `P0_Node0_Channel1_Dimm0`: channel numbers repeat on every die.
    if let (Some(n), Some(ch)) = (node, place.channel.as_ref()) {
        place.channel = Some(format!("{n}.{ch}"));
    }
    place
}

/// `DIMMA1`, `DIMM_A1` (as `DIMM` then `A1`), `DIMM0`, `DIMM 0`.
fn dimm_word(words: &[String], i: usize, rest: &str, place: &mut Place) -> usize {
    if let Some((ch, slot)) = letter_slot(rest) {
        place.channel.get_or_insert(ch);
        place.slot.get_or_insert(slot);
        return 1;
    }
    if let Some(n) = number(rest) {
        place.slot.get_or_insert(n);
        return 1;
    }
    if !rest.is_empty() {
        return 1;
    }
    match words.get(i + 1) {
        Some(next) => {
            if let Some((ch, slot)) = letter_slot(next) {
                place.channel.get_or_insert(ch);
                place.slot.get_or_insert(slot);
                2
            } else if let Some(n) = number(next) {
                place.slot.get_or_insert(n);
                2
            } else {
                1
            }
        }
        None => 1,
    }
}

/// A channel is one letter or a small number.
fn channel_name(name: &str) -> bool {
    (name.len() == 1 && name.chars().all(|c| c.is_ascii_uppercase())) || number(name).is_some()
}

/// Fills in `socket`, `channel` and `slot` of every DIMM from its locators.
/// `packages` is the number of CPU sockets the topology shows (0 when
/// unknown); with exactly one, DIMMs whose locator names a channel but no
/// socket belong to socket 0.
pub fn group_dimms(dimms: &mut [Dimm], packages: usize) {
    let places: Vec<Place> = dimms
        .iter()
        .map(|d| parse_place(d.locator.as_deref(), d.bank_locator.as_deref()))
        .collect();
    let base = places.iter().filter_map(|p| p.socket_label).min().unwrap_or(0);
    for (dimm, place) in dimms.iter_mut().zip(places) {
        dimm.socket = match place.socket_label {
            Some(label) => Some(label - base),
            None if packages == 1 && place.channel.is_some() => Some(0),
            None => None,
        };
        // A channel means something only within a known socket.
        dimm.channel = place.channel.filter(|_| dimm.socket.is_some());
        dimm.slot = place.slot;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(loc: &str, bank: &str) -> (Option<u32>, Option<String>, Option<u32>) {
        let bank = (!bank.is_empty()).then_some(bank);
        let p = parse_place(Some(loc), bank);
        (p.socket_label, p.channel, p.slot)
    }

    fn some(s: u32, ch: &str, slot: u32) -> (Option<u32>, Option<String>, Option<u32>) {
        (Some(s), Some(ch.to_string()), Some(slot))
    }

    #[test]
    fn board_styles() {
        assert_eq!(place("CPU0_DIMM_A1", "NODE 0"), some(0, "A", 1));
        assert_eq!(place("CPU1_DIMMB2", ""), some(1, "B", 2));
        assert_eq!(place("P1-DIMMB2", "P0_Node0_Channel1_Dimm1"), some(1, "B", 2));
        assert_eq!(place("DIMM_P0_C1", ""), some(0, "C", 1));
        assert_eq!(place("DIMM_P1_A0", "BANK 0"), some(1, "A", 0));
        assert_eq!(place("PROC 1 DIMM A1", ""), some(1, "A", 1));
        assert_eq!(place("DIMM 0", "P0 CHANNEL A"), some(0, "A", 0));
        assert_eq!(place("DIMM 1", "P1 CHANNEL H"), some(1, "H", 1));
        assert_eq!(place("DIMM_A1", "P0_Node1_Channel1_Dimm0"), some(0, "A", 1));
        assert_eq!(place("Dimm0", "P0_Node1_Channel1_Dimm0"), some(0, "1.1", 0));
        assert_eq!(
            place("ChannelA-DIMM0", "BANK 0"),
            (None, Some("A".into()), Some(0))
        );
        assert_eq!(place("cpu0_dimm_a1", ""), some(0, "A", 1), "case does not matter");
    }

    #[test]
    fn ambiguous_styles_stay_ungrouped() {
        assert_eq!(place("DIMM 0", ""), (None, None, Some(0)));
        assert_eq!(place("A1", "Not Specified"), (None, None, None));
        assert_eq!(place("PROC 1 DIMM 1", ""), (Some(1), None, Some(1)));
        assert_eq!(place("", ""), (None, None, None));
        assert_eq!(place("Bottom-Slot 1(left)", "BANK 0"), (None, None, None));
    }

    fn dimm(locator: &str) -> Dimm {
        crate::smbios::decode_type17("x", &{
            let mut raw = vec![0u8; 0x15];
            raw[0] = 17;
            raw[1] = 0x15;
            raw[0x10] = 1;
            raw.extend_from_slice(locator.as_bytes());
            raw.extend_from_slice(b"\0\0");
            raw
        })
        .unwrap()
    }

    #[test]
    fn sockets_renumber_from_the_lowest_label() {
        let mut d = vec![dimm("CPU1_DIMM_A1"), dimm("CPU2_DIMM_A1"), dimm("DIMM 3")];
        group_dimms(&mut d, 2);
        let got: Vec<_> = d.iter().map(|d| (d.socket, d.channel.clone())).collect();
        assert_eq!(
            got,
            vec![
                (Some(0), Some("A".into())),
                (Some(1), Some("A".into())),
                (None, None)
            ]
        );
        let mut d = vec![dimm("ChannelA-DIMM0"), dimm("ChannelB-DIMM0")];
        group_dimms(&mut d, 1);
        assert_eq!((d[1].socket, d[1].channel.as_deref()), (Some(0), Some("B")));
        group_dimms(&mut d, 2);
        assert_eq!(
            (d[1].socket, d[1].channel.as_deref()),
            (None, None),
            "two sockets: unknown"
        );
    }
}
