from spanrl.cli import cli

cli()
