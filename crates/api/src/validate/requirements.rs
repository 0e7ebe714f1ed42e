//! Resources by requirement (`spec.resources`): the rules of the
//! requirements themselves, and the one chooser of a shape from them, which
//! the server runs when it creates a job and the form runs as it is filled.
//!
//! Every shape of the workspace is an [`Offer`] (as dstack calls a machine
//! that may run a task): what it lacks of the requirements, and whether it
//! fits the job's allowed node groups. The smallest shape that lacks nothing
//! and fits is chosen (fewest GPUs, then least GPU memory, memory, CPUs).

use super::*;
use crate::{parse_compute_capability, AmountRange, ResourceRequirements, GPU_VENDORS};

/// The most GPUs a requirement may ask of one replica.
pub const REQUIRED_GPUS_MAX: i64 = 1024;
/// The most names a GPU requirement may list.
pub const GPU_NAMES_MAX: usize = 16;
const GPU_NAME_MAX_LEN: usize = 64;
const REQUIRED_CPUS_MAX: f64 = 1_000_000.0;
const REQUIRED_DISK_MAX_GB: i64 = 1 << 30;

/// The rules of `spec.resources` that need nothing but the job.
pub(super) fn check_resources(resources: &ResourceRequirements, problems: &mut Problems) {
    if let Some(gpu) = &resources.gpu {
        let vendor = gpu.vendor.as_deref().map(str::to_ascii_lowercase);
        if vendor.is_some_and(|v| !GPU_VENDORS.contains(&v.as_str())) {
            problems.add("spec.resources.gpu.vendor", format!("must be {}", or_list(&GPU_VENDORS)));
        }
        if let Some(names) = &gpu.name {
            if names.is_empty() || names.len() > GPU_NAMES_MAX {
                problems.add("spec.resources.gpu.name", format!("must list 1 to {GPU_NAMES_MAX} GPU names"));
            }
            for (i, name) in names.iter().enumerate() {
                let plain = name.bytes().all(|b| b.is_ascii_alphanumeric() || b" -_.".contains(&b));
                if name.trim().is_empty() || name.len() > GPU_NAME_MAX_LEN || !plain {
                    problems.add(
                        format!("spec.resources.gpu.name[{i}]"),
                        format!("must be a GPU name such as A100: letters, digits, spaces, '-', '_' or '.', at most {GPU_NAME_MAX_LEN}"),
                    );
                }
            }
        }
        check_amount(problems, "spec.resources.gpu.count", gpu.count, REQUIRED_GPUS_MAX);
        check_amount(problems, "spec.resources.gpu.memory_in_mb", gpu.memory_in_mb, MEMORY_MAX_MIB);
        check_amount(problems, "spec.resources.gpu.total_memory_in_mb", gpu.total_memory_in_mb, MEMORY_MAX_MIB);
        if gpu.compute_capability.as_deref().is_some_and(|c| parse_compute_capability(c).is_none()) {
            problems.add("spec.resources.gpu.compute_capability", "must be major.minor, such as 8.0");
        }
    }
    if let Some(cpu) = resources.cpu {
        let outside = |v: Option<f64>| v.is_some_and(|v| !(0.0..=REQUIRED_CPUS_MAX).contains(&v));
        if outside(cpu.min) || outside(cpu.max) {
            // Written out: formatting the float would bring the float
            // printer (9 KB) into the form's download.
            problems.add("spec.resources.cpu", "must be between 0 and 1000000");
        } else if cpu.min.zip(cpu.max).is_some_and(|(min, max)| min > max) {
            problems.add("spec.resources.cpu.max", "must not be less than min");
        }
    }
    check_amount(problems, "spec.resources.memory_in_mb", resources.memory_in_mb, MEMORY_MAX_MIB);
    check_amount(problems, "spec.resources.disk_in_gb", resources.disk_in_gb, REQUIRED_DISK_MAX_GB);
}

fn check_amount(problems: &mut Problems, path: &str, range: Option<AmountRange>, most: i64) {
    let Some(range) = range else { return };
    check_range(problems, &format!("{path}.min"), range.min, 0, most);
    check_range(problems, &format!("{path}.max"), range.max, 0, most);
    if range.min.zip(range.max).is_some_and(|(min, max)| min > max) {
        problems.add(format!("{path}.max"), "must not be less than min");
    }
}

/// What a shape lacks of a requirement: the requirement's field and what
/// the shape has instead, in words (`40 GiB per GPU`).
#[derive(Debug, Clone, PartialEq)]
pub struct Shortfall {
    pub field: &'static str,
    pub has: String,
}

/// A shape as a candidate for a job's requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer<'a> {
    pub shape: &'a ShapeChoice,
    /// Empty when the shape meets every requirement.
    pub shortfalls: Vec<Shortfall>,
    /// Whether the job's replicas fit the allowed node groups with this
    /// shape (`check_fit`).
    pub fits: bool,
}

impl Offer<'_> {
    pub fn meets(&self) -> bool {
        self.shortfalls.is_empty()
    }
}

/// Every shape as an offer for `spec`'s requirements, the smallest first.
pub fn offers<'a>(
    spec: &JobSpec,
    requirements: &ResourceRequirements,
    shapes: &'a [ShapeChoice],
    groups: &[NodeGroupChoice],
) -> Vec<Offer<'a>> {
    let size = |s: &'a ShapeChoice| {
        let gpus = gpu_count(s);
        let milli_cpus = (s.cpu.unwrap_or(0.0) * 1000.0) as i64;
        (gpus, gpu_gib(s) * gpus, s.memory_in_mb.unwrap_or(0), milli_cpus, s.id.as_deref())
    };
    let mut offers: Vec<Offer<'a>> = Vec::with_capacity(shapes.len());
    for shape in shapes {
        let offer = Offer {
            shape,
            shortfalls: shortfalls(spec, requirements, shape),
            fits: check_fit(spec, shape, groups).is_empty(),
        };
        insert_before(&mut offers, offer, |new, old| size(new.shape) < size(old.shape));
    }
    offers
}

/// Inserts `item` before the first element it goes `before`, keeping the
/// order of equals. A workspace has a handful of shapes; a library sort
/// would be kilobytes of the form's download for them.
fn insert_before<T>(list: &mut Vec<T>, item: T, before: impl Fn(&T, &T) -> bool) {
    let at = list.iter().position(|old| before(&item, old)).unwrap_or(list.len());
    list.insert(at, item);
}

/// The shape chosen among `offers`: the smallest that meets the
/// requirements and fits the node groups; failing that, the smallest that
/// meets them (whose fit problem `check_fit` then names).
pub fn chosen_offer<'a, 'b>(offers: &'b [Offer<'a>]) -> Option<&'b Offer<'a>> {
    offers.iter().find(|o| o.meets() && o.fits).or_else(|| offers.iter().find(|o| o.meets()))
}

/// Why `chosen` was chosen, in words, for the job's event and the form.
pub fn choice_words(requirements: &ResourceRequirements, offers: &[Offer], chosen: &ShapeChoice) -> String {
    let meeting: Vec<&str> = offers.iter().filter(|o| o.meets()).filter_map(|o| o.shape.id.as_deref()).collect();
    let id = chosen.id.as_deref().unwrap_or("");
    let others: Vec<&str> = meeting.iter().copied().filter(|m| *m != id).collect();
    let asked = requirement_words(requirements);
    match others.as_slice() {
        [] => format!("shape '{id}': the only shape that meets {asked}"),
        others => format!(
            "shape '{id}': the smallest of {} shapes that meet {asked} (also: {})",
            meeting.len(),
            others.join(", ")
        ),
    }
}

/// [`check_offers`] on its own, by field path: for a reader of the shapes
/// that is not the whole contract (`ResolvedSpec::resolve`).
pub fn offer_problems(spec: &JobSpec, offers: &[Offer]) -> FieldErrors {
    let mut problems = Problems::default();
    check_offers(spec, offers, &mut problems);
    problems.0
}

/// The problems of a job whose requirements no shape meets, or whose named
/// shape does not meet them.
pub(super) fn check_offers(spec: &JobSpec, offers: &[Offer], problems: &mut Problems) {
    if let Some(name) = spec.resource_shape.as_deref() {
        let Some(offer) = offers.iter().find(|o| o.shape.id.as_deref() == Some(name)) else { return };
        if let Some(first) = offer.shortfalls.first() {
            problems.add(
                "spec.resource_shape",
                format!(
                    "shape '{name}' has {}, which {} does not allow; choose another or leave it out for the smallest shape that meets spec.resources",
                    first.has, first.field
                ),
            );
        }
        return;
    }
    if chosen_offer(offers).is_some() {
        return;
    }
    // The fewest shortfalls first, and among those the largest shape, since
    // most requirements are a least.
    let mut nearest: Vec<&Offer> = Vec::new();
    for offer in offers.iter().rev() {
        insert_before(&mut nearest, offer, |new, old| new.shortfalls.len() < old.shortfalls.len());
    }
    let nearest: Vec<String> = nearest
        .iter()
        .take(3)
        .map(|o| {
            let mut has: Vec<&str> = Vec::new();
            for shortfall in &o.shortfalls {
                if !has.contains(&shortfall.has.as_str()) {
                    has.push(&shortfall.has);
                }
            }
            format!("'{}' (has {})", o.shape.id.as_deref().unwrap_or(""), has.join(", "))
        })
        .collect();
    let nearest = if nearest.is_empty() { "this workspace has no shapes".into() } else { nearest.join("; ") };
    // The field no shape meets, when there is one; else the requirements
    // only fail together.
    let first = offers.first().map(|o| o.shortfalls.as_slice()).unwrap_or_default();
    let field = first
        .iter()
        .map(|s| s.field)
        .find(|field| offers.iter().all(|o| o.shortfalls.iter().any(|s| s.field == *field)))
        .unwrap_or("spec.resources");
    let asked = spec.resources.as_ref().map(requirement_words).unwrap_or_default();
    problems.add(field, format!("no shape of this workspace has {asked}; the nearest: {nearest}"));
}

fn gpu_count(shape: &ShapeChoice) -> i64 {
    shape.accelerator_num.unwrap_or(0.0).ceil() as i64
}

/// A GPU's memory in whole GiB, rounded as GPUs are labelled.
fn gpu_gib(shape: &ShapeChoice) -> i64 {
    (shape.accelerator_memory_in_mb.unwrap_or(0) + 512) / 1024
}

/// The words of a type name, lower case (`NVIDIA-A100-80GB` → `nvidia`,
/// `a100`, `80gb`), so that a name is found as whole words: `a10` is not in
/// `a100`. (Compared word by word: a substring search would be more than a
/// kilobyte of the form's download.)
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_ascii_lowercase).collect()
}

/// Whether `words` has `name`'s words one after another.
fn has_words(words: &[String], name: &str) -> bool {
    let name = words_of(name);
    !name.is_empty() && words.windows(name.len()).any(|run| run == name.as_slice())
}

/// What `shape` lacks of `requirements` (and of `spec`'s shared memory).
fn shortfalls(spec: &JobSpec, requirements: &ResourceRequirements, shape: &ShapeChoice) -> Vec<Shortfall> {
    let mut lacks = Vec::new();
    let mut lack = |field: &'static str, has: String| lacks.push(Shortfall { field, has });
    let gpus = gpu_count(shape);
    if let Some(gpu) = &requirements.gpu {
        let kind = shape.accelerator_type.as_deref().unwrap_or("");
        let words = words_of(kind);
        let kind_words = || if kind.is_empty() { "an unnamed GPU".to_string() } else { kind.to_string() };
        if !gpu.count.unwrap_or(AmountRange::at_least(1)).contains(gpus) {
            lack("spec.resources.gpu.count", format!("{gpus} GPU"));
        }
        if gpus == 0 {
            // No GPU has none of the GPU's properties either, so a GPU
            // name no shape has is the field to change even where some
            // shapes have no GPUs at all.
            let asked = [
                ("spec.resources.gpu.vendor", gpu.vendor.is_some()),
                ("spec.resources.gpu.name", gpu.name.is_some()),
                ("spec.resources.gpu.memory_in_mb", gpu.memory_in_mb.is_some()),
                ("spec.resources.gpu.total_memory_in_mb", gpu.total_memory_in_mb.is_some()),
                ("spec.resources.gpu.compute_capability", gpu.compute_capability.is_some()),
            ];
            for (field, _) in asked.into_iter().filter(|(_, asked)| *asked) {
                lack(field, "0 GPU".into());
            }
        } else {
            if let Some(vendor) = gpu.vendor.as_deref().map(str::to_ascii_lowercase) {
                // A CUDA compute capability is NVIDIA's alone.
                let cuda = vendor == "nvidia" && shape.accelerator_compute_capability.is_some();
                if !cuda && !has_words(&words, &vendor) {
                    lack("spec.resources.gpu.vendor", kind_words());
                }
            }
            if let Some(names) = &gpu.name {
                if !names.iter().any(|name| has_words(&words, name)) {
                    lack("spec.resources.gpu.name", kind_words());
                }
            }
            let gib = gpu_gib(shape);
            if gpu.memory_in_mb.is_some_and(|r| !r.contains(gib * 1024)) {
                lack("spec.resources.gpu.memory_in_mb", format!("{gib} GiB per GPU"));
            }
            if gpu.total_memory_in_mb.is_some_and(|r| !r.contains(gib * gpus * 1024)) {
                lack("spec.resources.gpu.total_memory_in_mb", format!("{} GiB of GPU memory", gib * gpus));
            }
            if let Some(least) = gpu.compute_capability.as_deref().and_then(parse_compute_capability) {
                let has = shape.accelerator_compute_capability.as_deref().and_then(parse_compute_capability);
                if has.is_none_or(|has| has < least) {
                    let has = shape.accelerator_compute_capability.as_deref().unwrap_or("no known compute capability");
                    lack("spec.resources.gpu.compute_capability", format!("compute capability {has}"));
                }
            }
        }
    }
    let cpu = shape.cpu.unwrap_or(0.0);
    if requirements.cpu.is_some_and(|r| !r.contains(cpu)) {
        lack("spec.resources.cpu", format!("{} CPU", decimal(cpu)));
    }
    let memory = shape.memory_in_mb.unwrap_or(0);
    if requirements.memory_in_mb.is_some_and(|r| !r.contains(memory)) {
        lack("spec.resources.memory_in_mb", format!("{} memory", memory_words(memory)));
    }
    if let Some(disk) = requirements.disk_in_gb {
        match shape.ephemeral_storage_in_gb {
            Some(has) if disk.contains(has) => {}
            Some(has) => lack("spec.resources.disk_in_gb", format!("{has} GB disk")),
            None => lack("spec.resources.disk_in_gb", "no disk size given".into()),
        }
    }
    if spec.shared_memory_size.is_some_and(|size| size > memory) {
        lack("spec.shared_memory_size", format!("{} memory", memory_words(memory)));
    }
    lacks
}

/// MiB in words: whole GiB as GiB, else MiB.
fn memory_words(mib: i64) -> String {
    if mib % 1024 == 0 {
        format!("{} GiB", mib / 1024)
    } else {
        format!("{mib} MiB")
    }
}

/// The requirements in words: `1 × A100 or H100, 80 GiB or more per GPU, 4
/// CPU or more`.
pub fn requirement_words(requirements: &ResourceRequirements) -> String {
    let mut parts = Vec::new();
    if let Some(gpu) = &requirements.gpu {
        let kind = match (&gpu.name, &gpu.vendor) {
            (Some(names), _) => names.join(" or "),
            (None, Some(vendor)) => format!("{vendor} GPU"),
            (None, None) => "GPU".into(),
        };
        parts.push(match gpu.count {
            Some(count) => format!("{} × {kind}", range_words(count, 1, "")),
            None => kind,
        });
        if let Some(memory) = gpu.memory_in_mb {
            parts.push(format!("{} per GPU", range_words(memory, 1024, " GiB")));
        }
        if let Some(total) = gpu.total_memory_in_mb {
            parts.push(format!("{} of GPU memory", range_words(total, 1024, " GiB")));
        }
        if let Some(capability) = &gpu.compute_capability {
            parts.push(format!("compute capability {capability} or more"));
        }
    }
    if let Some(cpu) = requirements.cpu {
        let (min, max) = (cpu.min.map(decimal), cpu.max.map(decimal));
        parts.push(format!("{} CPU", ends_words(min, max)));
    }
    if let Some(memory) = requirements.memory_in_mb {
        parts.push(format!("{} memory", range_words(memory, 1024, " GiB")));
    }
    if let Some(disk) = requirements.disk_in_gb {
        parts.push(format!("{} disk", range_words(disk, 1, " GB")));
    }
    if parts.is_empty() {
        "no particular resources".into()
    } else {
        parts.join(", ")
    }
}

/// A range in a unit (`per` of the range's own unit make one): `80 GiB or
/// more`, `at most 2`, `1 to 2`, `2`.
fn range_words(range: AmountRange, per: i64, unit: &str) -> String {
    let amount = |n: i64| {
        if n % per == 0 {
            format!("{}{unit}", n / per)
        } else {
            format!("{}{unit}", decimal(n as f64 / per as f64))
        }
    };
    ends_words(range.min.map(amount), range.max.map(amount))
}

fn ends_words(min: Option<String>, max: Option<String>) -> String {
    match (min, max) {
        (Some(min), Some(max)) if min == max => min,
        (Some(min), Some(max)) => format!("{min} to {max}"),
        (Some(min), None) => format!("{min} or more"),
        (None, Some(max)) => format!("at most {max}"),
        (None, None) => "any".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CpuRange, GpuRequirement};

    fn shape(id: &str, gpus: f64, kind: Option<&str>, gpu_mib: Option<i64>, capability: Option<&str>) -> ShapeChoice {
        ShapeChoice {
            id: Some(id.into()),
            cpu: Some(8.0 * gpus.max(1.0)),
            memory_in_mb: Some(65_536 * gpus.max(1.0) as i64),
            accelerator_num: Some(gpus),
            accelerator_type: kind.map(String::from),
            accelerator_memory_in_mb: gpu_mib,
            accelerator_compute_capability: capability.map(String::from),
            ..ShapeChoice::default()
        }
    }

    fn shapes() -> Vec<ShapeChoice> {
        vec![
            shape("gpu.h100x8", 8.0, Some("NVIDIA H100 80GB HBM3"), Some(81_559), Some("9.0")),
            shape("gpu.a10x1", 1.0, Some("NVIDIA A10"), Some(23_028), Some("8.6")),
            shape("cpu", 0.0, None, None, None),
            shape("gpu.a100x1", 1.0, Some("NVIDIA A100-SXM4-80GB"), Some(81_559), Some("8.0")),
            shape("gpu.mi300x1", 1.0, Some("AMD Instinct MI300X"), Some(196_608), None),
        ]
    }

    fn pick(gpu: Option<GpuRequirement>, cpu: Option<CpuRange>) -> Option<String> {
        let requirements = ResourceRequirements { gpu, cpu, ..ResourceRequirements::default() };
        let shapes = shapes();
        let offers = offers(&JobSpec::default(), &requirements, &shapes, &[]);
        chosen_offer(&offers).and_then(|o| o.shape.id.clone())
    }

    fn gpu(f: impl FnOnce(&mut GpuRequirement)) -> Option<GpuRequirement> {
        let mut gpu = GpuRequirement::default();
        f(&mut gpu);
        Some(gpu)
    }

    #[test]
    fn the_smallest_shape_that_meets_every_requirement_is_chosen() {
        assert_eq!(pick(None, None).as_deref(), Some("cpu"), "no GPU asked: the smallest shape");
        assert_eq!(pick(gpu(|_| {}), None).as_deref(), Some("gpu.a10x1"), "any one GPU: the least GPU memory");
        let named = |name: &str| gpu(|g| g.name = Some(vec![name.into()]));
        assert_eq!(pick(named("A100"), None).as_deref(), Some("gpu.a100x1"));
        assert_eq!(pick(named("a10"), None).as_deref(), Some("gpu.a10x1"), "A10 is a word, not a prefix of A100");
        assert_eq!(pick(named("H100"), None).as_deref(), Some("gpu.h100x8"));
        assert_eq!(pick(named("V100"), None), None);
        let memory = gpu(|g| g.memory_in_mb = Some(AmountRange::at_least(81_920)));
        assert_eq!(pick(memory, None).as_deref(), Some("gpu.a100x1"), "81,559 MiB is an 80 GB GPU");
        let amd = gpu(|g| g.vendor = Some("amd".into()));
        assert_eq!(pick(amd, None).as_deref(), Some("gpu.mi300x1"));
        let nvidia = gpu(|g| g.vendor = Some("NVIDIA".into()));
        assert_eq!(pick(nvidia, None).as_deref(), Some("gpu.a10x1"));
        let hopper = gpu(|g| g.compute_capability = Some("8.9".into()));
        assert_eq!(pick(hopper, None).as_deref(), Some("gpu.h100x8"));
        let exact = gpu(|g| g.count = Some(AmountRange { min: Some(2), max: Some(4) }));
        assert_eq!(pick(exact, None), None, "8 GPUs are not 2 to 4");
        let total = gpu(|g| g.total_memory_in_mb = Some(AmountRange::at_least(300 * 1024)));
        assert_eq!(pick(total, None).as_deref(), Some("gpu.h100x8"));
        let cpus = Some(CpuRange { min: Some(9.0), max: None });
        assert_eq!(pick(None, cpus).as_deref(), Some("gpu.h100x8"));
    }

    #[test]
    fn a_shape_that_does_not_fit_the_node_groups_gives_way_to_one_that_does() {
        let shapes = shapes();
        let group = NodeGroupChoice {
            id: Some("one-gpu".into()),
            nodes: vec![crate::NodeInfo {
                name: "n".into(),
                capacity: crate::ResourceAmounts { cpu: 64.0, memory_in_mb: 1 << 20, gpu: 1 },
            }],
            ..NodeGroupChoice::default()
        };
        let requirements = ResourceRequirements {
            gpu: gpu(|g| g.memory_in_mb = Some(AmountRange::at_least(20_000))),
            ..Default::default()
        };
        let spec = JobSpec::default();
        let offers = offers(&spec, &requirements, &shapes, std::slice::from_ref(&group));
        assert_eq!(chosen_offer(&offers).and_then(|o| o.shape.id.as_deref()), Some("gpu.a10x1"));
        let two = JobSpec { parallelism: Some(2), completions: Some(2), ..JobSpec::default() };
        let offers = super::offers(&two, &requirements, &shapes, std::slice::from_ref(&group));
        let chosen = chosen_offer(&offers).unwrap();
        assert!(!chosen.fits, "nothing fits two at once: the smallest that meets them, whose fit is the problem");
    }

    #[test]
    fn requirements_and_choices_read_as_words() {
        let requirements = ResourceRequirements {
            gpu: Some(GpuRequirement {
                name: Some(vec!["A100".into(), "H100".into()]),
                count: Some(AmountRange { min: Some(1), max: Some(2) }),
                memory_in_mb: Some(AmountRange::at_least(81_920)),
                compute_capability: Some("8.0".into()),
                ..GpuRequirement::default()
            }),
            cpu: Some(CpuRange { min: Some(4.0), max: None }),
            memory_in_mb: Some(AmountRange { min: None, max: Some(1536) }),
            disk_in_gb: Some(AmountRange { min: Some(100), max: Some(100) }),
        };
        assert_eq!(
            requirement_words(&requirements),
            "1 to 2 × A100 or H100, 80 GiB or more per GPU, compute capability 8.0 or more, 4 or more CPU, at most 1.5 GiB memory, 100 GB disk"
        );
        let shapes = shapes();
        let requirements =
            ResourceRequirements { gpu: gpu(|g| g.vendor = Some("nvidia".into())), ..Default::default() };
        let offers = offers(&JobSpec::default(), &requirements, &shapes, &[]);
        let chosen = chosen_offer(&offers).unwrap().shape;
        assert_eq!(
            choice_words(&requirements, &offers, chosen),
            "shape 'gpu.a10x1': the smallest of 3 shapes that meet nvidia GPU (also: gpu.a100x1, gpu.h100x8)"
        );
    }

    #[test]
    fn requirements_break_rules_on_their_own_fields() {
        let check = |requirements: ResourceRequirements| {
            let mut problems = Problems::default();
            check_resources(&requirements, &mut problems);
            problems.0
        };
        let errors = check(ResourceRequirements {
            gpu: gpu(|g| {
                g.vendor = Some("acme".into());
                g.name = Some(vec!["A100".into(), "--privileged\n".into()]);
                g.count = Some(AmountRange { min: Some(-1), max: None });
                g.total_memory_in_mb = Some(AmountRange { min: Some(2), max: Some(1) });
                g.compute_capability = Some("8".into());
            }),
            cpu: Some(CpuRange { min: Some(f64::NAN), max: None }),
            disk_in_gb: Some(AmountRange { min: Some(5), max: Some(1) }),
            ..Default::default()
        });
        let keys: Vec<&str> = errors.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "spec.resources.cpu",
                "spec.resources.disk_in_gb.max",
                "spec.resources.gpu.compute_capability",
                "spec.resources.gpu.count.min",
                "spec.resources.gpu.name[1]",
                "spec.resources.gpu.total_memory_in_mb.max",
                "spec.resources.gpu.vendor",
            ]
        );
        assert_eq!(parse_compute_capability("8.10").max(parse_compute_capability("8.9")), Some((8, 10)));
        assert_eq!(check(ResourceRequirements { gpu: gpu(|_| {}), ..Default::default() }).len(), 0);
    }
}
