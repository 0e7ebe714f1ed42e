//! The form's tables and its mapping, tested in the browser.

use jobdeck_api::*;
use wasm_bindgen_test::wasm_bindgen_test;

use super::*;

fn state_with(pairs: &[(FieldId, &str)]) -> FormState {
    let mut s = FormState::default();
    for (i, text) in pairs {
        s.v[*i] = text.to_string();
    }
    s
}

#[wasm_bindgen_test]
fn every_field_and_list_is_in_the_layout_once() {
    let mut fields = [0; FIELD_COUNT];
    let mut lists = [0; LIST_COUNT];
    for item in LAYOUT.iter().flat_map(|s| s.items) {
        match *item {
            Item::Field(i) => fields[i.0] += 1,
            Item::List(l) => lists[l.0] += 1,
        }
    }
    assert_eq!(fields, [1; FIELD_COUNT]);
    assert_eq!(lists, [1; LIST_COUNT]);
    for list in &LISTS {
        assert_eq!(list.columns.len(), list.column_paths.len(), "{}", list.id);
    }
}

#[wasm_bindgen_test]
fn an_empty_form_is_a_job_with_defaults_left_out() {
    let (job, problems) = FormState::default().to_job();
    assert!(problems.is_empty(), "{problems:?}");
    let json = serde_json::to_string(&job).unwrap();
    assert_eq!(json, r#"{"metadata":{"visibility":"public"},"spec":{"container":{}}}"#);
}

#[wasm_bindgen_test]
fn fields_map_to_the_job() {
    let mut s = state_with(&[
        (NAME, " train "),
        (SHAPE, "gpu.1xh100"),
        (NODE_GROUPS, "a,b"),
        (PRIORITY, "high-9000"),
        (CAN_PREEMPT, "1"),
        (COMPLETIONS, "4"),
        (PARALLELISM, "2"),
        (BACKOFF_LIMIT, "0"),
        (DEADLINE, "3600"),
        (IMAGE, "busybox"),
        (TAG, "1.36"),
        (REGISTRY_USERNAME, "me"),
        (REGISTRY_PASSWORD, "pw"),
        (PULL_SECRETS, "one, two"),
        (COMMAND, "echo hi\necho bye"),
        (LOG_COLLECTION, "off"),
        (SHARED_MEMORY, "1024"),
        (ARCHIVE_TIME, "12h"),
        (VISIBILITY, "private"),
    ]);
    s.shared_memory_typed = true;
    s.lists[ENVS] = vec![["A".into(), "value".into(), "1".into()], ["TOKEN".into(), "secret".into(), "hf".into()]];
    s.lists[PORTS] = vec![["8080".into(), "UDP".into(), String::new()]];
    s.lists[MOUNTS] = vec![["node-local".into(), "/d".into(), "/mnt/d".into()]];
    s.lists[LABELS] = vec![["team".into(), "vision".into(), String::new()]];
    let (job, problems) = s.to_job();
    assert!(problems.is_empty(), "{problems:?}");
    let spec = &job.spec;
    assert_eq!(job.metadata.name.as_deref(), Some("train"));
    assert_eq!(job.metadata.visibility, Some(Visibility::Private));
    assert_eq!(job.metadata.labels.as_ref().unwrap()["team"], "vision");
    assert_eq!(spec.resource_shape.as_deref(), Some("gpu.1xh100"));
    assert_eq!(spec.node_groups(), ["a".to_string(), "b".into()]);
    assert_eq!(spec.priority().level(), 9);
    assert!(spec.can_preempt() && !spec.can_be_preempted());
    assert_eq!((spec.completions(), spec.parallelism(), spec.backoff_limit()), (4, 2, 0));
    assert_eq!(spec.active_deadline_seconds, Some(3600));
    assert_eq!(spec.container.image_reference().as_deref(), Some("busybox:1.36"));
    assert_eq!(spec.container.registry_password.as_deref(), Some("pw"));
    assert_eq!(spec.image_pull_secrets(), ["one".to_string(), "two".into()]);
    assert_eq!(spec.container.command(), ["/bin/sh".to_string(), "-c".into(), "echo hi\necho bye".into()]);
    assert_eq!(spec.container.ports()[0].container_port, 8080);
    assert!(!spec.log_collection(true));
    assert_eq!(spec.envs()[1].value_from.as_ref().unwrap().secret_name_ref.as_deref(), Some("hf"));
    assert_eq!(spec.envs()[1].value, None);
    assert_eq!(spec.mounts()[0].mount_path, "/mnt/d");
    assert_eq!(spec.shared_memory_size, Some(1024));
    assert_eq!(spec.ttl_seconds_after_finished, Some(12 * 3600));

    // Back to the form and out again: the same job.
    let again = FormState::from_job(&job);
    assert_eq!(again.to_job().0, job);
}

#[wasm_bindgen_test]
fn text_that_is_no_number_is_a_problem_of_its_field() {
    let mut s = state_with(&[(COMPLETIONS, "four"), (ARCHIVE_TIME, "3 weeks")]);
    s.lists[PORTS] = vec![["80x".into(), "TCP".into(), String::new()]];
    let (job, problems) = s.to_job();
    assert_eq!(job.spec.completions, None);
    assert_eq!(problems["spec.completions"], ["must be a whole number, not 'four'"]);
    assert!(problems["spec.ttl_seconds_after_finished"][0].starts_with("must be a duration"));
    assert!(problems.contains_key("spec.container.ports[0].container_port"));
}

#[wasm_bindgen_test]
fn more_than_one_worker_leaves_completions_and_parallelism_out() {
    let s = state_with(&[(WORKERS, "4"), (COMPLETIONS, "2")]);
    let spec = s.to_job().0.spec;
    assert_eq!((spec.workers, spec.completions, spec.parallelism), (Some(4), None, None));
    // And a `lep --num-workers 3` job reads as three workers.
    let mut lep = LeptonJob::default();
    lep.spec.completions = Some(3);
    lep.spec.parallelism = Some(3);
    lep.spec.intra_job_communication = Some(true);
    let form = FormState::from_job(&lep);
    assert_eq!(form.v[WORKERS], "3");
    assert_eq!(form.to_job().0.spec.workers(), 3);
}

#[wasm_bindgen_test]
fn commands_keep_their_shell_or_argument_list() {
    let mut job = LeptonJob::default();
    job.spec.container.command = Some(vec!["/bin/bash".into(), "-c".into(), "echo hi".into()]);
    let s = FormState::from_job(&job);
    assert_eq!(s.v[COMMAND], "echo hi");
    assert_eq!(s.to_job().0.spec.container.command, job.spec.container.command);

    job.spec.container.command = Some(vec!["python3".into(), "train.py".into(), "--note".into(), "it's".into()]);
    let mut s = FormState::from_job(&job);
    assert_eq!(s.v[COMMAND], r"python3 train.py --note 'it'\''s'");
    assert_eq!(s.to_job().0.spec.container.command, job.spec.container.command);
    // Edited, it runs as a shell line.
    s.v[COMMAND] = "python3 eval.py".into();
    assert_eq!(s.to_job().0.spec.container.command.unwrap(), ["/bin/sh", "-c", "python3 eval.py"]);
}

#[wasm_bindgen_test]
fn arguments_are_one_per_line_and_kept_as_they_were_until_edited() {
    let mut job = LeptonJob::default();
    job.spec.container.args = Some(vec!["--epochs".into(), "10".into(), "two words".into()]);
    let mut s = FormState::from_job(&job);
    assert_eq!(s.v[ARGS], "--epochs\n10\ntwo words");
    assert_eq!(s.to_job().0.spec.container.args, job.spec.container.args);
    // An argument with a line break cannot be typed as one line, but comes
    // back whole from a clone or an import that is not edited.
    job.spec.container.args = Some(vec!["line one\nline two".into()]);
    s = FormState::from_job(&job);
    assert_eq!(s.to_job().0.spec.container.args, job.spec.container.args);
    s.v[ARGS] = "--lr\n\n3e-4\n".into();
    assert_eq!(s.to_job().0.spec.container.args.unwrap(), ["--lr", "3e-4"], "blank lines are no arguments");
    s.v[ARGS] = String::new();
    assert_eq!(s.to_job().0.spec.container.args, None);
}

#[wasm_bindgen_test]
fn a_clone_drops_what_the_server_owns_and_keeps_the_rest() {
    let job: LeptonJob = serde_json::from_str(
        r#"{"metadata":{"id":"train-ab12c","name":"train","created_by":"alice","created_at":5,"visibility":"private"},
            "spec":{"resource_shape":"cpu.small","container":{"image":"busybox","command":["/bin/sh","-c","true"]},
                    "max_queued_duration_seconds":600,"intra_job_communication":true},
            "status":{"state":"Running"}}"#,
    )
    .unwrap();
    let s = FormState::from_job(&job);
    let (again, _) = s.to_job();
    assert_eq!(again.metadata.id, None);
    assert_eq!(again.metadata.created_by, None);
    assert_eq!(again.status, None);
    assert_eq!(again.metadata.name.as_deref(), Some("train"));
    assert_eq!(again.spec.max_queued_duration_seconds, Some(600));
    assert_eq!(again.spec.intra_job_communication, Some(true));
}

#[wasm_bindgen_test]
fn paths_land_on_their_inputs() {
    let mut s = FormState::default();
    s.lists[ENVS] = vec![Default::default(); 3];
    s.lists[LABELS] =
        vec![["a".into(), String::new(), String::new()], ["example.com/team".into(), String::new(), String::new()]];
    let cases: &[(&str, Option<&str>)] = &[
        ("metadata.name", Some("job-name")),
        ("metadata.id", Some("job-name")),
        ("spec.container.image", Some("image")),
        ("spec.container.image_tag", Some("image-tag")),
        ("spec.parallelism", Some("parallelism")),
        ("spec.intra_job_communication", Some("workers")),
        ("spec.queue_config.priority_class", Some("priority")),
        ("spec.queue_config.can_preempt", Some("can-preempt")),
        ("spec.affinity.allowed_dedicated_node_groups[1]", Some("node-groups")),
        ("spec.container.command[0]", Some("command")),
        ("spec.envs[2].name", Some("envs-2-0")),
        ("spec.envs[2].value_from.secret_name_ref", Some("envs-2-2")),
        ("spec.envs[1].value", Some("envs-1-2")),
        ("spec.envs[7].name", Some("envs-add")),
        ("spec.envs", Some("envs-add")),
        ("metadata.labels[\"example.com/team\"]", Some("labels-1-0")),
        ("metadata.labels[1]", Some("labels-1-0")),
        ("spec.storage_attachments", None),
        ("spec.containerx", None),
    ];
    for (path, id) in cases {
        assert_eq!(target_of(path, &s).map(Target::input_id).as_deref(), *id, "{path}");
    }
    let mut errors = FieldErrors::new();
    errors.insert("spec.storage_attachments".into(), vec!["no".into()]);
    errors.insert("metadata.name".into(), vec!["first".into(), "second".into()]);
    let placed = Placed::place(&errors, &s);
    assert_eq!(placed.by_input["job-name"], "first");
    assert_eq!(placed.other, ["spec.storage_attachments: no"]);
    assert_eq!(placed.count(), 2);
}

#[wasm_bindgen_test]
fn a_key_listed_twice_is_a_problem_of_the_second_row() {
    let mut s = FormState::default();
    s.lists[LABELS] = vec![["team".into(), "a".into(), String::new()], ["team".into(), "b".into(), String::new()]];
    let (_, problems) = s.to_job();
    let placed = Placed::place(&problems, &s);
    assert_eq!(placed.by_input["labels-1-0"], "the key 'team' is already listed above");
}

#[wasm_bindgen_test]
fn every_duration_field_takes_each_spelling_and_sends_seconds() {
    let s = state_with(&[(DEADLINE, "PT4H30M"), (QUEUE_LIMIT, "72h"), (GRACE_PERIOD, "90"), (ARCHIVE_TIME, "P1D")]);
    let (job, problems) = s.to_job();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(job.spec.active_deadline_seconds, Some(16_200));
    assert_eq!(job.spec.max_queued_duration_seconds, Some(259_200));
    assert_eq!(job.spec.termination_grace_period_seconds, Some(90));
    assert_eq!(job.spec.ttl_seconds_after_finished, Some(86_400));
    let back = FormState::from_job(&job);
    assert_eq!([&back.v[DEADLINE], &back.v[QUEUE_LIMIT], &back.v[GRACE_PERIOD]], ["270m", "3d", "90s"]);
    let (_, problems) = state_with(&[(GRACE_PERIOD, "soon")]).to_job();
    assert!(problems["spec.termination_grace_period_seconds"][0].contains("PT4H30M"), "{problems:?}");
}
