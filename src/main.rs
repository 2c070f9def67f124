//! The `corpus-dedup` command: [`corpus_dedup::cli`].

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(corpus_dedup::cli::main(std::env::args_os()))
}
