//! The man page, generated from the clap definition (clap_mangen) plus two sections clap does
//! not know: every subcommand with its arguments, and the exit statuses from core's table.

use std::io::{self, Write};

use pidguard::ExitCode;

/// Escape text for roff: backslashes, and a leading `.` or `'` that would read as a request.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// Write the whole page (section 1) to `out`.
pub fn render(out: &mut dyn Write) -> io::Result<()> {
    let cmd = crate::command();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    writeln!(out, ".SH COMMANDS")?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let mut sub = sub.clone().bin_name(format!("pidguard {}", sub.get_name()));
        let usage = sub.render_usage().to_string();
        let usage = usage.trim_start_matches("Usage: ");
        writeln!(out, ".SS \"{}\"", roff(usage))?;
        if let Some(about) = sub.get_long_about().or(sub.get_about()) {
            for para in about.to_string().split("\n\n") {
                writeln!(out, ".PP\n{}", roff(para.trim()))?;
            }
        }
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set() && a.get_id() != "help") {
            let name = match (arg.get_long(), arg.get_value_names()) {
                (Some(l), Some(v)) if arg.get_action().takes_values() => {
                    format!("\\fB\\-\\-{}\\fR \\fI{}\\fR", roff(l), v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(" "))
                }
                (Some(l), _) if !arg.get_action().takes_values() => format!("\\fB\\-\\-{}\\fR", roff(l)),
                (Some(l), _) => format!("\\fB\\-\\-{}\\fR \\fI{}\\fR", roff(l), arg.get_id().as_str().to_uppercase()),
                (None, Some(v)) => format!("\\fI{}\\fR", v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(" ")),
                (None, None) => format!("\\fI{}\\fR", arg.get_id().as_str().to_uppercase()),
            };
            let mut help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            if !defaults.is_empty() && arg.get_action().takes_values() {
                help.push_str(&format!(" [default: {}]", defaults.join(", ")));
            }
            writeln!(out, ".TP\n{name}\n{}", roff(&help))?;
        }
    }
    writeln!(out, ".SH \"EXIT STATUS\"")?;
    for c in ExitCode::ALL {
        writeln!(out, ".TP\n\\fB{}\\fR ({})\n{}", c.code(), c.slug(), roff(c.meaning()))?;
    }
    writeln!(out, ".PP\nA cleanup of several hooks exits with the most urgent code of its hooks: 2, then 3, then 5.")?;
    writeln!(out, ".SH \"SEE ALSO\"\nstart\\-stop\\-daemon(8)")?;
    man.render_version_section(out)?;
    Ok(())
}
