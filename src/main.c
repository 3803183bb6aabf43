/* placeholder until the subcommand table lands (next commit) */
int main(void)
{
        return 2;
}
