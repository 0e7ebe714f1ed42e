//! The readable name a job gets when its creator gives none ("brave-otter"):
//! two words, so people can say it aloud and tell two jobs apart in a list.
//! The job's id adds Jobdeck's random suffix as for any other name, so two
//! jobs with the same drawn name are still two ids.

/// Adjectives and nouns of at most 7 letters each, so a name is at most 15
/// characters: within Lepton's 36 and most workspace limits.
const ADJECTIVES: [&str; 48] = [
    "amber", "brave", "bright", "calm", "clever", "cosmic", "crisp", "curious", "daring", "eager", "early", "fancy",
    "fast", "fierce", "gentle", "glad", "golden", "grand", "happy", "honest", "humble", "jolly", "keen", "kind",
    "lively", "lucky", "merry", "mighty", "nimble", "noble", "patient", "plucky", "polite", "proud", "quick", "quiet",
    "rapid", "serene", "sharp", "shiny", "silver", "smart", "steady", "sunny", "swift", "tidy", "vivid", "witty",
];
const NOUNS: [&str; 48] = [
    "badger", "beaver", "bison", "cedar", "comet", "condor", "coral", "crane", "delta", "dolphin", "eagle", "falcon",
    "finch", "fjord", "galaxy", "gecko", "glacier", "harbor", "heron", "island", "jaguar", "koala", "lagoon", "lemur",
    "lynx", "magpie", "maple", "meadow", "meteor", "nebula", "oak", "orca", "osprey", "otter", "panda", "pebble",
    "pine", "puffin", "quasar", "raven", "river", "robin", "salmon", "sparrow", "summit", "tiger", "walrus", "willow",
];

/// A readable name of at most `max_len` characters, drawn from `random`
/// (two bytes are used): `adjective-noun`, or the noun alone when the
/// workspace's limit is shorter than the pair, cut to the limit as a last
/// resort.
pub fn readable_name(random: [u8; 2], max_len: usize) -> String {
    let adjective = ADJECTIVES[random[0] as usize % ADJECTIVES.len()];
    let noun = NOUNS[random[1] as usize % NOUNS.len()];
    let pair = format!("{adjective}-{noun}");
    if pair.len() <= max_len {
        return pair;
    }
    noun.chars().take(max_len.max(1)).collect()
}

/// [`readable_name`] from the system's random source; `None` when it
/// cannot be read.
pub fn random_readable_name(max_len: usize) -> Option<String> {
    let mut random = [0u8; 2];
    getrandom::fill(&mut random).ok()?;
    Some(readable_name(random, max_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_drawn_name_is_a_valid_job_name_within_the_limit() {
        for first in 0..=255u8 {
            for second in [0u8, 7, 100, 255] {
                for max in [36, 12, 6, 3] {
                    let name = readable_name([first, second], max);
                    assert!(name.len() <= max, "{name} for {max}");
                    jobdeck_api::validate::check_job_name(&name, max).unwrap_or_else(|e| panic!("{name}: {e}"));
                }
            }
        }
        assert_eq!(readable_name([1, 33], 36), "brave-otter");
    }
}
