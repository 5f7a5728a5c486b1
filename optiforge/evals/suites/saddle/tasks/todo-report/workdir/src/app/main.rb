require 'optparse'

# TODO(alice): parse flags properly
def main
  # TODO: someday
  run(ARGV)  # TODO(bob): handle errors
end

# todo(dave): lowercase marker is not one
main
