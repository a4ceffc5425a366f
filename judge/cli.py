import click


@click.command()
def judge() -> None:
    """placeholder"""
