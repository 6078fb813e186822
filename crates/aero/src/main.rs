fn main() -> anyhow::Result<()> {
    anyhow::bail!("aero: not wired up yet")
}
