//! The console's entry point: mounts the app on the page's body.

fn main() {
    console_error_panic_hook_lite();
    leptos::mount::mount_to_body(jobdeck_console::App);
}

/// Sends panics to the browser console instead of failing silently; a few
/// lines instead of another dependency.
fn console_error_panic_hook_lite() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&info.to_string().into());
    }));
}
