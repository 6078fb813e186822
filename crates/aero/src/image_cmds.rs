//! `aero compare` (two screenshots, pixel by pixel) and `aero needle create` (an openQA
//! needle from a screenshot).

use std::path::PathBuf;
use std::process::ExitCode;

use aero::imagediff::{self, Rect};
use aero::needle::{Area, AreaType, new_needle_json};
use aero::screenshot::{read_png, write_png};
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct CompareArgs {
    a: PathBuf,
    b: PathBuf,
    /// Largest per-channel difference that still counts as equal.
    #[arg(long, default_value_t = 0, value_name = "N")]
    tolerance: u8,
    /// Write a picture of the differences (red: differs, blue: excluded).
    #[arg(long, value_name = "OUT.png")]
    diff: Option<PathBuf>,
    /// Ignore a rectangle (repeatable).
    #[arg(long, value_name = "X,Y,W,H")]
    exclude: Vec<Rect>,
}

/// Exit 0 equal, 1 different, 2 bad input.
pub fn compare_main(args: CompareArgs) -> ExitCode {
    let run = || -> anyhow::Result<bool> {
        let a = read_png(&args.a)?;
        let b = read_png(&args.b)?;
        let d = imagediff::compare(&a, &b, args.tolerance, &args.exclude)
            .map_err(anyhow::Error::msg)?;
        println!(
            "{} differing pixels, max channel difference {}",
            d.differing, d.max_channel_diff
        );
        if let Some(out) = &args.diff {
            write_png(out, d.diff.width, d.diff.height, &d.diff.rgba)?;
        }
        Ok(d.differing == 0)
    };
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("aero: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[derive(Args, Debug)]
pub struct NeedleArgs {
    #[command(subcommand)]
    command: NeedleCommand,
}

#[derive(Subcommand, Debug)]
enum NeedleCommand {
    /// Make a needle (NAME.json + NAME.png) from a screenshot.
    Create {
        screen: PathBuf,
        /// A match area (repeatable).
        #[arg(long, required = true, value_name = "X,Y,W,H")]
        area: Vec<Rect>,
        /// An exclude area (repeatable).
        #[arg(long, value_name = "X,Y,W,H")]
        exclude: Vec<Rect>,
        /// Tag (repeatable).
        #[arg(long, required = true, value_name = "NAME")]
        tag: Vec<String>,
        /// Required similarity in percent (openQA's default 96 when not given).
        #[arg(long = "match", value_name = "PERCENT")]
        match_percent: Option<f64>,
        /// Where to write the json; the png goes beside it.
        #[arg(short, long, value_name = "NAME.json")]
        output: PathBuf,
    },
}

pub fn needle_main(args: NeedleArgs) -> ExitCode {
    let NeedleCommand::Create {
        screen,
        area,
        exclude,
        tag,
        match_percent,
        output,
    } = args.command;
    let run = || -> anyhow::Result<()> {
        anyhow::ensure!(
            output.extension().is_some_and(|e| e == "json"),
            "-o must name a .json file"
        );
        let image = read_png(&screen)?;
        let to_area = |r: &Rect, kind| Area {
            xpos: r.x,
            ypos: r.y,
            width: r.w,
            height: r.h,
            kind,
            match_percent: if kind == AreaType::Match {
                match_percent
            } else {
                None
            },
            margin: None,
        };
        let areas: Vec<Area> = area
            .iter()
            .map(|r| to_area(r, AreaType::Match))
            .chain(exclude.iter().map(|r| to_area(r, AreaType::Exclude)))
            .collect();
        let text = new_needle_json(tag, areas);
        // Validate exactly as a later load will.
        let json = serde_json::from_str(&text)?;
        aero::needle::Needle::new(String::new(), json, image.clone())
            .map_err(|why| anyhow::anyhow!("{}: {why}", screen.display()))?;
        let png = output.with_extension("png");
        write_png(&png, image.width, image.height, &image.rgba)?;
        std::fs::write(&output, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", output.display()))?;
        println!("wrote {} and {}", output.display(), png.display());
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aero: {e:#}");
            ExitCode::from(2)
        }
    }
}
